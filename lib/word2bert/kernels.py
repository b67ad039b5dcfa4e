"""Compiled CPU kernels: word2vec's training steps, fused (``csrc/word2vec_step.cpp``).

``Word2VecModel.sgd_step`` is the step written in torch, the one the book shows: some twenty operators per batch,
each of which reads or writes a [B, 1 + K, D] tensor. The kernel does the same arithmetic in one pass over the
rows a batch touches, and its vectors agree with ``sgd_step``'s to float rounding (tests/test_kernels.py).

It is a torch operator (``torch.ops.word2bert.word2vec_sgd_steps``: a chunk's batches in turn, each with its
learning rate), compiled by the system's C++ compiler (``$CXX``, else ``c++``; on Debian ``apt-get install g++``)
against the installed torch the first time it is needed, about 20 seconds, and kept in the course's cache
(``~/.cache/word2bert/kernels``, see ``word2bert.data.english.cache_dir``), one library per source, torch, Python
environment and CPU: it is compiled for the CPU it runs on (``-march=native``: the rows' dot products in AVX2 and
FMA where the CPU has them, as the BLAS gensim calls picks at run time), so a cache shared by two kinds of machine
holds one library for each. A compiler that does not know ``-march=native`` builds it without. ``make setup`` builds
it (``python -m word2bert.kernels``). Where it cannot be built, training runs ``sgd_step`` and a warning says why,
once. One compiler command, not ``torch.utils.cpp_extension.load``: that needs ninja, and a process killed while it
builds leaves a lock that every later process waits on forever; here a file lock dies with its process and the
library appears in one rename, so two processes (pytest workers) that need it at once build it once.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch

SOURCE = Path(__file__).parent / "csrc" / "word2vec_step.cpp"
BUILD_TIMEOUT_S = 600


def cpu_identity() -> str:
    """The CPU a library compiled with ``-march=native`` is for: its model and features, else the platform's name."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return "".join(sorted({line for line in f if line.startswith(("model name", "flags", "Features"))}))
    except OSError:  # macOS, Windows
        return f"{platform.machine()} {platform.processor()}"


def library_path() -> Path:
    """Where the compiled kernel lives: one file per source, torch, Python environment and CPU."""
    from .data.english import cache_dir

    key = f"{torch.__version__}{sys.prefix}{cpu_identity()}".encode()
    key = hashlib.sha256(SOURCE.read_bytes() + key).hexdigest()[:12]
    return cache_dir() / "kernels" / f"word2vec_step-torch-{torch.__version__}-{key}.so"


def compile_command(output: Path, native: bool = True) -> list[str]:
    """The compiler command: the source against torch's headers and libraries, with its C++ ABI and OpenMP (which
    ``at::parallel_for`` splits the work with, on torch's threads), for this CPU (``native``) or any of its kind."""
    from torch.utils.cpp_extension import include_paths, library_paths

    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    lib = library_paths()[0]
    return [
        *shlex.split(os.environ.get("CXX", "c++")),
        *("-O3", "-fopenmp", "-std=c++20", "-shared", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w"),
        *(["-march=native"] if native else []),
        *(f"-I{p}" for p in include_paths()),
        str(SOURCE),
        *("-o", str(output), f"-L{lib}", f"-Wl,-rpath,{lib}", "-lc10", "-ltorch_cpu"),
    ]


def build(library: Path) -> None:
    """Compile into a temporary file beside ``library``, then rename it into place (other processes never see half
    a library). Raises with the compiler's last line when it fails."""
    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
        output = Path(scratch) / library.name
        for native in (True, False):  # a compiler that does not know -march=native (Apple's, on some versions)
            command = compile_command(output, native)
            done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            if not done.returncode or "march" not in done.stderr:
                break
        if done.returncode:
            lines = (done.stderr or done.stdout).strip().splitlines()
            errors = [line for line in lines if "error" in line.lower()] or lines  # gcc ends with the source's caret
            raise RuntimeError(errors[0] if errors else f"the compiler exited with {done.returncode}")
        os.replace(output, library)


@functools.cache
def word2vec_step():
    """``torch.ops.word2bert.word2vec_sgd_steps``, built or loaded on first use; None where it cannot be built."""
    try:
        from filelock import FileLock  # torch's own dependency

        library = library_path()
        library.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(library) + ".lock"):  # the first process builds; the others wait, then load its library
            if not library.exists():
                build(library)
        torch.ops.load_library(str(library))
        return torch.ops.word2bert.word2vec_sgd_steps
    except Exception as error:  # no compiler, a read-only cache: the torch step does the same, slower
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        warnings.warn(
            f"word2bert: the compiled word2vec step could not be built ({reason}); training uses the torch step "
            "(Word2VecModel.sgd_step): the same vectors, slower. A C++ compiler builds it: apt-get install g++, "
            "then make setup (or python -m word2bert.kernels).",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


if __name__ == "__main__":  # make setup: build now rather than in the first training run (a failure only warns)
    print(f"word2bert kernels: {'built, ' + str(library_path()) if word2vec_step() else 'not built'}")
