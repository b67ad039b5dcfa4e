"""Compiled CPU kernels: word2vec's training step, fused (``csrc/word2vec_step.cpp``).

``Word2VecModel.sgd_step`` is the step written in torch, the one the book shows: some twenty operators per batch,
each of which reads or writes a [B, 1 + K, D] tensor. The kernel does the same arithmetic in one pass over the
rows a batch touches, about three times faster, and its vectors agree with ``sgd_step``'s to float rounding.

It is built with ``torch.utils.cpp_extension`` (a C++ compiler and ``ninja``; on Debian ``apt-get install g++``)
the first time it is needed, about 40 seconds, and kept in the course's cache (``~/.cache/word2bert``, see
``word2bert.data.english.cache_dir``) for this torch and this Python. ``make setup`` builds it
(``python -m word2bert.kernels``). Where it cannot be built, training runs ``sgd_step`` instead and a warning
says why, once.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import warnings
from pathlib import Path

import torch

SOURCE = Path(__file__).parent / "csrc" / "word2vec_step.cpp"


def build_directory() -> Path:
    """Where the compiled kernel lives: one folder per source, torch and Python environment."""
    from .data.english import cache_dir

    key = hashlib.sha256(f"{SOURCE.read_bytes()!r}{torch.__version__}{sys.prefix}".encode()).hexdigest()[:12]
    return cache_dir() / "kernels" / f"torch-{torch.__version__}-{key}"


@functools.cache
def word2vec_step():
    """``torch.ops.word2bert.word2vec_sgd_step``, built or loaded on first use; None where it cannot be built."""
    try:
        from torch.utils import cpp_extension

        directory = build_directory()
        directory.mkdir(parents=True, exist_ok=True)
        cpp_extension.load(
            name="word2bert_kernels",
            sources=[str(SOURCE)],
            extra_cflags=["-O3", "-fopenmp"],  # OpenMP: at::parallel_for splits the work over torch's threads
            extra_ldflags=["-fopenmp"],
            build_directory=str(directory),
            is_python_module=False,  # a torch operator: called through the dispatcher, which releases the GIL
        )
        return torch.ops.word2bert.word2vec_sgd_step
    except Exception as error:  # no compiler, no ninja, a read-only cache: the torch step does the same
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        warnings.warn(
            f"word2bert: the compiled word2vec step could not be built ({reason}); training uses the torch step "
            "(Word2VecModel.sgd_step), the same vectors about three times slower. A C++ compiler and ninja build it: "
            "apt-get install g++, then make setup (or python -m word2bert.kernels).",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


if __name__ == "__main__":  # make setup: build now rather than in the first training run (a failure only warns)
    print(f"word2bert kernels: {'built in ' + str(build_directory()) if word2vec_step() else 'not built'}")
