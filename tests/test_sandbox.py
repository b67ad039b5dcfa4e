"""The grader's parts, one at a time: the data-only wire, the proxies across the sandbox, the feedback.

The whole pipeline, with hostile submissions, is tested through `make autograde` in test_grading.py
and test_hostile.py; these tests pin down the contracts those rest on.
"""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import subprocess
import sys
import time

import pytest
import torch
from torch import nn

from word2bert_grader.assignment import Step, plan
from word2bert_grader.outputs import feedback
from word2bert_grader.remote.proxy import SandboxFailure, Session, StudentError, UnreadableFailure
from word2bert_grader.sandbox import wire
from word2bert_grader.sandbox.process import Limits, Sandbox, Unavailable, check_available
from word2bert_grader.task import Result

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def roundtrip(value, handle=None):
    stream = io.BytesIO()
    encoder = wire.Encoder()
    stream.write(wire.frame_bytes({"v": encoder.encode(value)}, encoder.tensors))
    data = stream.getvalue()
    position = [0]

    def read(n):
        chunk = data[position[0] : position[0] + n]
        position[0] += n
        return chunk

    header, tensors = wire.read_frame(read, 2**30)
    return wire.Decoder(tensors, handle).decode(header["v"])


def frame(header: bytes, blob: bytes = b""):
    data = struct.pack(">Q", len(header)) + header + struct.pack(">Q", len(blob)) + blob
    stream = io.BytesIO(data)
    return wire.read_frame(stream.read, 2**20)


def test_wire_rebuilds_plain_values_exactly():
    g = torch.Generator().manual_seed(3)
    rng = random.Random(5)
    value = {
        "ints": [1, -2, 2**63 - 1, -(2**63)],  # 64 bits, what a tensor holds
        "t": (torch.arange(6).view(2, 3), torch.tensor([True, False])),
        "f": [1.5, float("inf")],
        "s": "é",
        "none": None,
        "size": torch.Size([2, 3]),
        "dtype": torch.float16,
        3: [rng, g],
        (1, "a"): torch.zeros(2, dtype=torch.bfloat16),
    }
    back = roundtrip(value)
    assert back.keys() == value.keys()
    assert back["ints"] == value["ints"] and back["f"] == value["f"] and back["s"] == "é"
    assert type(back["t"]) is tuple and torch.equal(back["t"][0], value["t"][0])
    assert back["size"] == torch.Size([2, 3]) and back["dtype"] is torch.float16
    r2, g2 = back[3]
    assert r2.random() == rng.random(), "random.Random travels by state"
    assert torch.equal(torch.rand(4, generator=g2), torch.rand(4, generator=g)), "so does torch.Generator"
    assert back[(1, "a")].dtype == torch.bfloat16


@pytest.mark.parametrize(
    "header, why",
    [
        (b"not json", "not a JSON"),
        (b'{"v": {"$tensor": "t0"}}', "unknown or repeated tensor"),
        (b'{"v": {"$eval": "__import__(\'os\')"}}', "unexpected object"),
        (b'{"v": {"$dtype": "object"}}', "unknown dtype"),
        (b'{"v": {"$random": [3, [1, 2], null]}}', "bad random.Random state"),
        (b'{"v": {"$dict": [[{"$list": []}, 1]]}}', "dict key"),
        (b'{"v": ' + b'{"$list": [' * 80 + b"1" + b"]}" * 80 + b"}", "nested too deeply"),
        # data built to be slow to read: a dict of n keys of one hash takes n^2 steps to build (and ints beyond 64 bits
        # make keys of one hash as many as wanted)
        (b'{"v": {"$list": [1, 10000000000000000000000000000000]}}', "64 bits"),
        (json.dumps({"v": {"$dict": [[2.0 ** (61 * k), 0] for k in range(1, 11)]}}).encode(), "same hash"),
    ],
)
def test_wire_refuses_forged_messages(header, why):
    with pytest.raises(wire.WireError, match=why):
        head, tensors = frame(header)
        wire.Decoder(tensors).decode(head["v"])


def test_wire_refuses_a_tensor_read_twice_and_oversized_headers():
    encoder = wire.Encoder()
    name = encoder.tensor(torch.zeros(3))
    stream = io.BytesIO()
    stream.write(wire.frame_bytes({"v": {"$list": [{"$tensor": name}, {"$tensor": name}]}}, encoder.tensors))
    head, tensors = wire.read_frame(io.BytesIO(stream.getvalue()).read, 2**20)
    with pytest.raises(wire.WireError, match="repeated"):
        wire.Decoder(tensors).decode(head["v"])
    with pytest.raises(wire.WireError, match="header of"):
        wire.read_frame(io.BytesIO(struct.pack(">Q", 2**40)).read, 2**50)


def test_the_runner_answers_the_wires_requests_and_no_others():
    from word2bert_grader.sandbox.runner import Runner

    handlers = {name.removeprefix("op_") for name in vars(Runner) if name.startswith("op_")}
    assert handlers == set(wire.Op), (
        f"requests without a handler or handlers without a request: {handlers ^ set(wire.Op)}"
    )


def test_the_cache_key_covers_every_module_that_decides_a_grade():
    """A grader module whose change can change a grade is in the result cache's key (cache.GRADING_MODULES): every
    module the grading process imports (the harness, and what it imports), the runner (the sandbox's side), and the
    executors, whose row for a submission stopped at its wall-clock limit is cached too. Otherwise a result graded
    under the old code is reused after a change."""
    import ast
    from pathlib import Path

    import word2bert_grader
    from word2bert_grader.cache import GRADING_MODULES

    folder = Path(word2bert_grader.__file__).parent

    def imported(name: str) -> set[str]:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("word2bert_grader"):
                base = node.module.removeprefix("word2bert_grader").strip(".").replace(".", "/")
                found |= {f"{base}/{a.name}".strip("/") for a in node.names} | {base}
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:  # the runner's wire
                found |= {f"{Path(name).parent}/{a.name}" for a in node.names}
        return {m for m in found if (folder / f"{m}.py").is_file()}

    deciding, todo = set(), ["remote/harness", "executors", "sandbox/runner"]
    while todo:
        name = todo.pop()
        if name not in deciding:
            deciding.add(name)
            todo += imported(name)
    assert deciding >= {"sandbox/process", "sandbox/bwrap", "sandbox/seccomp", "remote/proxy", "sandbox/wire"}
    assert deciding <= set(GRADING_MODULES), f"not in the cache key: {sorted(deciding - set(GRADING_MODULES))}"


def test_wire_sends_only_data():
    for value in (lambda x: x, object(), nn.Linear(2, 2), open):
        with pytest.raises(TypeError):
            wire.Encoder().encode(value)


def started(limits: Limits) -> Sandbox:
    sandbox = Sandbox(limits)
    try:
        sandbox.start()
    except Exception as error:  # no bubblewrap or no user namespaces here
        pytest.skip(f"the sandbox cannot start here: {error}")
    return sandbox


@pytest.fixture(scope="module")
def session():
    sandbox = started(Limits(memory_mb=1024))
    s = Session(sandbox)
    code = """
import random, math, torch
from torch import nn

def double_in_place(x, rng):
    x.mul_(2)
    return x.sum().item(), rng.random()

def uses_global_random():
    return random.random(), torch.rand(1).item()

def draws(n, *, generator):
    return torch.rand(n, generator=generator)

def loss(a, b):
    return (a * b).sum() ** 2

class Highway(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Sequential(nn.Linear(dim, dim), nn.Sigmoid())
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        g = self.gate(x)
        return g * torch.relu(self.transform(x)) + (1 - g) * x

class Picky(ValueError):
    pass

def raises(kind):
    raise {"value": ValueError, "picky": Picky, "exit": SystemExit}[kind]("no: " + kind)

def loops():
    while True:
        pass

def lying():
    class Yes:
        def __eq__(self, other):
            return True
    return Yes()

from collections import namedtuple
Pair = namedtuple("Pair", "first second")

def pair(x):
    return Pair(x * 2, torch.max(x, dim=0))  # a namedtuple holding a torch.return_types.max

def keep_or_copy(a, b, options):
    b = list(b)
    b.append(0)
    return a, b, options, [a]  # the first argument and the options themselves, a copy of the second

def repeat(x, n):
    return [x] * n

class Tagger(nn.Module):
    # torch's own layers that the grader does not run itself: recurrent, norm, activation, loss
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 3, batch_first=True, bidirectional=True)
        self.norm = nn.BatchNorm1d(6)
        self.clip = nn.Hardtanh(-0.5, 0.5)
        self.loss_fct = nn.CrossEntropyLoss(label_smoothing=0.1)

    def forward(self, x, labels):
        h, _ = self.lstm(x)
        logits = self.clip(self.norm(h[:, -1]))
        return logits, self.loss_fct(logits, labels)
"""
    reply, _ = sandbox.request({"op": "run_cell", "source": code}, timeout=60)
    assert reply["error"] is None, reply
    yield s
    sandbox.close()


def bind(session, *names):
    session.deadline = time.monotonic() + 60
    return session.names(list(names))


@needs_bwrap
def test_arguments_changed_in_place_come_back(session):
    f = bind(session, "double_in_place")["double_in_place"]
    x, rng = torch.ones(3), random.Random(0)
    total, draw = f(x, rng)
    assert total == 6.0 and torch.equal(x, torch.full((3,), 2.0)), "the mutation is seen by the caller"
    assert draw == random.Random(0).random()
    reference = random.Random(0)
    reference.random()
    assert rng.getstate() == reference.getstate(), "the generator advanced as if the call were local"
    # passed by keyword too: the test's own generator moves on (two calls, one stream), not a copy in the kwargs
    f(torch.ones(3), rng=rng)
    reference.random()
    assert rng.getstate() == reference.getstate(), "a keyword's random.Random advanced as if the call were local"
    draws, g = bind(session, "draws")["draws"], torch.Generator().manual_seed(0)
    first, second = draws(3, generator=g), draws(3, generator=g)
    local = torch.Generator().manual_seed(0)
    assert torch.equal(first, torch.rand(3, generator=local)) and torch.equal(second, torch.rand(3, generator=local))


@needs_bwrap
def test_global_random_state_is_sent_but_never_taken_back(session):
    f = bind(session, "uses_global_random")["uses_global_random"]
    random.seed(1)
    torch.manual_seed(1)
    first = f()
    random.seed(1)
    torch.manual_seed(1)
    assert f() == first, "the student's code sees the grader's global state"
    random.seed(1)
    f()
    assert random.getstate() != random.Random(1).getstate(), "the grader's stream moves on after a call"
    assert f() != first


@needs_bwrap
def test_gradients_flow_across_the_sandbox(session):
    f = bind(session, "loss")["loss"]
    a = torch.randn(4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    f(a, b).backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ((a2 * b2).sum() ** 2).backward()
    assert torch.allclose(a.grad, a2.grad) and torch.allclose(b.grad, b2.grad)


@needs_bwrap
def test_student_modules_are_mirrored(session):
    Highway = bind(session, "Highway")["Highway"]
    assert isinstance(Highway, type) and issubclass(Highway, nn.Module)
    torch.manual_seed(0)
    layer = Highway(5)
    assert isinstance(layer, Highway) and isinstance(layer.transform, nn.Linear)
    assert layer.transform.in_features == 5 and isinstance(layer.gate[1], nn.Sigmoid)
    assert sorted(n for n, _ in layer.named_parameters()) == [
        "gate.0.bias",
        "gate.0.weight",
        "transform.bias",
        "transform.weight",
    ]
    x = torch.randn(3, 5)
    with torch.no_grad():
        layer.transform.weight.fill_(0.1)  # the grader's changes reach the student's module
    out = layer(x)
    g = layer.gate(x)  # a torch layer inside it runs here, on the mirror's weights
    want = g * torch.relu(layer.transform(x)) + (1 - g) * x
    assert torch.allclose(out, want, atol=1e-6)
    assert layer.calls.item() == 1, "buffers the student's forward changes come back"
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    before = layer(x).detach()
    optimizer.step()
    assert not torch.allclose(layer(x), before), "an optimizer step on the mirror changes the student's forward"
    layer.eval()
    assert not layer.training and not layer.gate.training


@needs_bwrap
def test_tuple_subclasses_cross_as_tuples(session):
    pair = bind(session, "pair")["pair"]
    x = torch.tensor([[1.0, 5.0], [3.0, 2.0]])
    first, (values, indices) = pair(x)  # unsafe for fairness: a correct namedtuple answer is unreadable
    assert torch.equal(first, x * 2) and values.tolist() == [3.0, 5.0] and indices.tolist() == [1, 0]


@needs_bwrap
def test_a_result_that_is_an_argument_is_that_argument(session):
    # unfair the other way: a wrong answer that returns its input where the contract asks for a copy ("truncate_pair
    # must return copies") passed, because every list came back as a new one
    keep_or_copy = bind(session, "keep_or_copy")["keep_or_copy"]
    a, b, options = [1, [2]], [3], {"k": [4]}
    got_a, got_b, got_options, nested = keep_or_copy(a, b, options=options)
    assert got_a is a and nested[0] is a and got_options is options, "the arguments themselves, as in a local call"
    assert got_b == [3, 0] and b == [3], "a copy is a copy"
    assert got_a[1] is a[1]


@needs_bwrap
def test_references_to_the_arguments_are_bounded(session):
    # unsafe: 5,000 references (60 kB of message) to a list of 1,000 values stand for 5 million values, and the
    # tests' own work on them (sorting, comparing) would take time out of proportion to what was sent
    repeat = bind(session, "repeat")["repeat"]
    big = list(range(1000))
    assert all(r is big for r in repeat(big, 10))
    with pytest.raises(UnreadableFailure):
        repeat(big, 5000)


@needs_bwrap
def test_modules_of_torch_the_grader_does_not_run_are_mirrored_and_run_in_the_sandbox(session):
    Tagger = bind(session, "Tagger")["Tagger"]
    torch.manual_seed(0)
    tagger = Tagger()
    assert sorted(n for n, _ in tagger.named_parameters())[:3] == [
        "lstm.bias_hh_l0",
        "lstm.bias_hh_l0_reverse",
        "lstm.bias_ih_l0",
    ]
    assert "norm.running_mean" in dict(tagger.named_buffers()), "buffers of torch's layers come back"
    x, labels = torch.randn(5, 7, 4), torch.tensor([0, 1, 2, 3, 4])
    logits, loss = tagger(x, labels)
    assert logits.shape == (5, 6) and logits.abs().max() <= 0.5 and loss.ndim == 0
    loss.backward()
    assert tagger.lstm.weight_ih_l0.grad is not None and tagger.norm.weight.grad is not None
    assert tagger.norm.num_batches_tracked.item() == 1, "the batch norm's statistics moved in the sandbox"


@needs_bwrap
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: the grader's tests may use one")
def test_what_comes_back_is_on_the_device_of_the_tests_tensors(session):
    f, Tagger = bind(session, "double_in_place", "Tagger").values()
    x = torch.ones(3, device="cuda")
    f(x, random.Random(0))
    assert x.device.type == "cuda" and x.tolist() == [2.0, 2.0, 2.0], "a changed argument stays where it was"
    tagger = Tagger().to("cuda")
    logits, loss = tagger(torch.randn(5, 7, 4, device="cuda"), torch.arange(5, device="cuda"))
    assert logits.device.type == "cuda" and loss.device.type == "cuda"  # unfair: CPU results beside CUDA tensors
    loss.backward()
    assert tagger.lstm.weight_ih_l0.grad.device.type == "cuda"


@needs_bwrap
def test_student_exceptions_keep_their_builtin_type(session):
    raises = bind(session, "raises")["raises"]
    with pytest.raises(ValueError, match="no: value"):
        raises("value")
    with pytest.raises(ValueError) as info:
        raises("picky")
    assert type(info.value).__name__ == "Picky" and isinstance(info.value, StudentError)
    with pytest.raises(StudentError):  # never the grader's own SystemExit
        raises("exit")


@needs_bwrap
def test_lying_objects_are_not_data(session):
    got = bind(session, "lying")["lying"]()
    assert got != 1 and got != [] and not (got == "anything"), "an object of the student's is only a handle"


@needs_bwrap
def test_a_call_past_the_limit_is_a_failure_tests_cannot_catch(session):
    loops = bind(session, "loops")["loops"]
    session.limit = 1
    session.deadline = time.monotonic() + 1
    start = time.monotonic()
    with pytest.raises(SandboxFailure, match="limit"):
        try:
            loops()
        except Exception:  # a test's `except Exception` does not swallow it
            pytest.fail("caught as Exception")
    assert time.monotonic() - start < 15
    assert session.sandbox.process.poll() is not None, "the runaway sandbox was killed"


def test_no_bubblewrap_stops_with_the_fix(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(Unavailable, match="make system-deps"):
        check_available()


@pytest.mark.slow
def test_autograde_without_bubblewrap_exits_with_the_reason(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "word2bert_grader", "--root", str(tmp_path), "autograde"],
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent"},
        check=False,
    )
    assert run.returncode != 0 and "bubblewrap" in run.stderr and "--unsafe-no-sandbox" in run.stderr


def test_feedback_escapes_and_sanitizes_what_the_student_wrote():
    step = Step("student", "print('<script>alert(1)</script>')")
    record = type(
        "R",
        (),
        {
            "step": step,
            "failure": "",
            "outputs": [
                {"type": "stream", "name": "stdout", "text": "<script>alert(2)</script>"},
                {
                    "type": "display",
                    "data": {"text/html": "<b>ok</b><script>alert(3)</script><img src=x onerror=alert(4)>"},
                },
                {"type": "display", "data": {"image/png": "PHN2Zz4=", "text/plain": "<i>"}},
            ],
        },
    )()
    md = type(
        "R",
        (),
        {
            "step": Step("markdown", "<script>alert(5)</script> [x](javascript:alert(6))", student_markdown=True),
            "failure": "",
            "outputs": [],
        },
    )()
    result = Result(student="<eve>", assignment="a", max_score=1)
    sanitizer = feedback.Sanitizer()
    sanitizer.outputs([record, md])
    page = feedback.page(result, [record, md], sanitizer)
    assert "<script" not in page and "onerror" not in page and 'href="javascript' not in page
    assert "<b>ok</b>" in page, "harmless HTML survives sanitizing"
    assert "data:image/png" not in page, "an image that is not a PNG is not shown as one"
    assert "&lt;eve&gt;" in page


def test_the_similarity_page_escapes_what_students_wrote():
    from word2bert_grader.outputs import _PAGES
    from word2bert_grader.outputs.similarity import Pair, Report

    pair = Pair("a", "<b>eve</b>", "solutions", 0.9, (0.9, 0.8), 100)
    code = [("x = 1  # </pre><script>alert(1)</script>", True), ("<img src=x onerror=alert(2)>", False)]
    page = _PAGES.get_template("similarity.html").render(
        report=Report([pair], 2, 1),
        pairs=[{"pair": pair, "sides": [("a/<i>", code)] * 2}],
        threshold=0.6,
    )
    assert "<script" not in page and "<img" not in page and "<b>eve" not in page and "&lt;b&gt;eve" in page


def test_the_plan_restores_tests_and_keeps_scratch_cells_in_place():
    def cell(kind, source, **nbgrader):
        meta = {"nbgrader": nbgrader} if nbgrader else {}
        return {"cell_type": kind, "source": source, "metadata": meta}

    source = [
        cell("code", "import torch", grade_id="setup", locked=True),
        cell("code", "def f(x):\n    return x", grade_id="f", solution=True),
        cell(
            "code",
            "assert f(1) == 1\n### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS",
            grade_id="test_f",
            grade=True,
            points=2,
        ),
    ]
    submission = [
        cell("code", "import os", grade_id="setup", locked=True),
        cell("code", "def f(x):\n    return 0", grade_id="f", solution=True),
        cell("code", "scratch = 1"),
        cell("code", "def f(x):\n    return x", grade_id="f", solution=True),
        cell("code", "pass", grade_id="test_f", grade=True, points=200),
    ]
    laid = plan(source, submission)
    kinds = [(s.kind, s.source.splitlines()[0]) for s in laid.steps]
    assert kinds == [
        ("setup", "import torch"),
        ("student", "def f(x):"),
        ("student", "scratch = 1"),
        ("answer", "def f(x):"),
        ("test", "assert f(1) == 1"),
    ], kinds
    assert laid.steps[3].source.endswith("return x"), "the last copy of an answer is the answer"
    assert laid.steps[-1].points == 2 and "HIDDEN" in laid.steps[-1].source
    assert laid.contract == ["f"]
    assert any("edited test cells test_f" in n for n in laid.notes)
    assert any("edited read-only cells setup" in n for n in laid.notes)
    assert json.dumps(laid.notes)


CPU_HOG = """
import os, resource, time
end = time.time() + 2.0
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        while time.time() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime)
"""


@pytest.mark.slow
def test_a_sandbox_keeps_at_most_its_cpus_busy():
    """Three busy processes for 2 s in a sandbox of one CPU: about 2 s of CPU time, where a cgroup can say so."""
    sandbox = started(Limits(cpus=1))
    try:
        dirs = sandbox._cgroup.dirs if sandbox._cgroup else []
        if not any((d / "cpu.max").exists() or (d / "cpu.cfs_quota_us").exists() for d in dirs):
            pytest.skip("no cgroup of our own with a cpu controller here: the quota is not applied")
        reply, _ = sandbox.request({"op": "run_cell", "source": CPU_HOG}, timeout=60)
        text = "".join(o.get("text", "") for o in reply.get("outputs", []))
        used = float(text.split()[-1])
        # unsafe: a submission's processes take every core, and a classmate's cells run past their limits
        assert used < 2.0 * 1.3 + 0.3, f"3 busy processes used {used:.1f} s of CPU in 2 s with a quota of one CPU"
    finally:
        sandbox.close()


@needs_bwrap
def test_the_sandbox_tells_a_notebook_it_is_being_graded():
    """W2B_GRADING=1 inside the sandbox: a notebook's own exploration (exercise 4 runs all-MiniLM-L6-v2 on the
    student's sentences) skips its model while graded, so grading a class never loads it. (A sandbox of its own: the
    module's shared one may have been stopped by a test before it.)"""
    sandbox = started(Limits())
    try:
        cell = {"op": "run_cell", "source": "import os\ngraded = os.environ.get('W2B_GRADING')"}
        reply, _ = sandbox.request(cell, timeout=60)
        assert reply["error"] is None, reply
        reply, _ = sandbox.request({"op": "run_cell", "source": "assert graded == '1', graded"}, timeout=60)
        assert reply["error"] is None, "a notebook in the sandbox does not see W2B_GRADING=1"
    finally:
        sandbox.close()


def test_a_restart_replays_the_cells_that_finished_before():
    """After a cell stops the sandbox, the next start runs the finished cells again, each within its own limit (a
    replay that passed its time limit where the tensors go failed the whole submission: 'the grader failed')."""
    from word2bert_grader.assignment import Kind
    from word2bert_grader.remote.harness import Record, _Grader
    from word2bert_grader.task import Settings

    sandbox = started(Limits())
    try:
        grader = _Grader(Settings(), sandbox, [])
        grader.run_cell(first := Record(Step(Kind.STUDENT, "x = 41")))
        grader.run_cell(Record(Step(Kind.STUDENT, "import os\nos._exit(3)")))
        assert not first.failure and sandbox.process.poll() is not None
        grader.start()
        reply, _ = sandbox.request({"op": "run_cell", "source": "assert x == 41, x"}, timeout=60)
        assert reply["error"] is None and grader.restarts == 1 and not first.failure, (reply, first.failure)
    finally:
        sandbox.close()


UNCOUNTED_MEMORY = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)

def outcome(call):
    try:
        result = call()
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
    return "works" if result != -1 else errno.errorcode.get(ctypes.get_errno(), "?")

ipc = 0o600 | 0o1000  # IPC_CREAT
found = {
    "socketpair": outcome(socket.socketpair),
    "socket": outcome(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)),
    "memfd_create": outcome(lambda: os.memfd_create("held")),
    "shmget": outcome(lambda: libc.shmget(0, 2**20, ipc)),
    "msgget": outcome(lambda: libc.msgget(0, ipc)),
    "semget": outcome(lambda: libc.semget(0, 1, ipc)),
    "pipe": outcome(os.pipe),
}
"""


@needs_bwrap
@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "watchdog"])
def test_memory_no_rss_shows_is_refused_where_only_the_watchdog_limits_memory(monkeypatch, cgroup):
    """Where the grading user cannot make a cgroup, the sandbox's memory limit is a watchdog that reads the RSS of its
    processes. Socket buffers, memfds and System V IPC hold kernel memory in no RSS (a red team held 600 MB in socket
    pairs under a 256 MB limit), so there these calls fail with EPERM; a pipe still works. With a cgroup, which counts
    that memory, they work."""
    from word2bert_grader.sandbox import process

    if not cgroup:
        monkeypatch.setattr(process.Cgroup, "create", classmethod(lambda cls, limits: None))
    sandbox = started(Limits())
    try:
        if cgroup and sandbox._cgroup is None:
            pytest.skip("this user cannot make a cgroup here")
        reply, _ = sandbox.request({"op": "run_cell", "source": UNCOUNTED_MEMORY}, timeout=60)
        assert reply["error"] is None, reply
        reply, _ = sandbox.request({"op": "run_cell", "source": "print(sorted(found.items()))"}, timeout=60)
        found = dict(eval("".join(o.get("text", "") for o in reply["outputs"])))
    finally:
        sandbox.close()
    assert found.pop("pipe") == "works", "a sandbox must still make pipes (Python's subprocess needs them)"
    expected = "works" if cgroup else "EPERM"
    # unsafe (watchdog): a cell holds gigabytes in socket buffers or memfds past the memory limit, unseen
    assert found == dict.fromkeys(found, expected), found
