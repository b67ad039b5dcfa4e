"""word2vec's compiled step (word2bert.kernels): the same vectors as the torch step, a fallback with one warning
where it cannot be built, and one build when two processes need it at once."""

import copy
import os
import shlex
import shutil
import subprocess
import sys
import warnings

import pytest
import torch

from word2bert import kernels
from word2bert import word2vec as w2v
from word2bert.data import ToyWorld

# Debian, CI and the README's set-up have a compiler; only a machine without one may skip
needs_compiler = pytest.mark.skipif(
    shutil.which(shlex.split(os.environ.get("CXX", "c++"))[0]) is None, reason="no C++ compiler ($CXX or c++)"
)


def batch(vocab: int, size: int, negative: int, context: int | None, seed: int):
    g = torch.Generator().manual_seed(seed)
    targets = torch.randint(vocab, (size,), generator=g)
    noise = torch.randint(vocab, (size, negative), generator=g)
    noise[: size // 10, 0] = targets[: size // 10]  # noise words equal to the target are skipped
    if context is None:  # skip-gram: a small vocabulary, so that rows repeat within the batch
        return torch.randint(vocab, (size,), generator=g), None, targets, noise
    mask = torch.rand(size, context, generator=g) < 0.6
    mask[:, 0] = True  # CBOW: every example has a context word
    return torch.randint(vocab, (size, context), generator=g), mask, targets, noise


@needs_compiler
@pytest.mark.parametrize("context", [None, 6], ids=["skip-gram", "CBOW"])
@pytest.mark.parametrize("threads", [1, 2])
def test_fused_step_is_sgd_step(context, threads):
    assert kernels.word2vec_step() is not None, "the compiler is there, but the kernel did not build"
    torch.manual_seed(0)
    plain = w2v.Word2VecModel(40, 24)
    torch.nn.init.normal_(plain.output_vectors.weight, std=0.5)  # output rows of zeros would hide a wrong step
    fused = copy.deepcopy(plain)
    before = plain.input_vectors.weight.clone(), plain.output_vectors.weight.clone()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    lrs = [0.05, 0.04, 0.03]
    try:
        inputs, mask, targets, noise = batch(40, 700, 5, context, seed=0)  # three batches: 300, 300, the last 100
        loss = sum(
            plain.sgd_step(*(None if t is None else t[b : b + 300] for t in (inputs, targets, noise, mask)), lr)
            for lr, b in zip(lrs, range(0, 700, 300))
        )
        assert fused.fused_sgd_steps(inputs, targets, noise, mask, lrs, 300) == pytest.approx(loss, rel=1e-5)
    finally:
        torch.set_num_threads(previous)
    for table, start in zip(["input_vectors", "output_vectors"], before):
        a, b = getattr(plain, table).weight, getattr(fused, table).weight
        assert (a - start).abs().max() > 0.1, f"{table}: the steps barely moved the rows, the test would prove little"
        torch.testing.assert_close(b, a, rtol=0, atol=1e-5, msg=f"{table}: the fused step differs from sgd_step")


@needs_compiler
@pytest.mark.parametrize("sg", [1, 0], ids=["skip-gram", "CBOW"])
def test_fused_training_gives_sgd_steps_vectors(sg):
    sentences = [s for doc in ToyWorld(2).corpus(8_000) for s in doc]
    kw = dict(vector_size=16, epochs=2, sg=sg, min_count=1, workers=1, progress=False, device="cpu", alpha=0.05)
    fused, plain = w2v.Word2Vec(sentences, **kw), w2v.Word2Vec(sentences, fused=False, **kw)
    torch.testing.assert_close(fused.wv.vectors, plain.wv.vectors, rtol=0, atol=2e-5)
    assert fused.loss_history == pytest.approx(plain.loss_history, rel=1e-5)


def test_without_a_compiler_training_falls_back_with_one_warning(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("WORD2BERT_CACHE", str(tmp_path / "cache"))  # no library built before
    kernels.word2vec_step.cache_clear()
    sentences = [s for doc in ToyWorld(2).corpus(3_000) for s in doc]
    kw = dict(vector_size=8, epochs=1, min_count=1, progress=False, device="cpu")
    try:
        with pytest.warns(RuntimeWarning, match="could not be built.*no-such-compiler") as caught:
            fallback = w2v.Word2Vec(sentences, **kw)
        assert len(caught) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per process, not once per model
            w2v.Word2Vec(sentences, **kw)
    finally:
        kernels.word2vec_step.cache_clear()
    torch.testing.assert_close(fallback.wv.vectors, w2v.Word2Vec(sentences, fused=False, **kw).wv.vectors)


@pytest.mark.slow  # two fresh interpreters importing torch: about 6 s on an idle machine
@needs_compiler
def test_two_processes_build_the_kernel_once(tmp_path):
    """Two pytest workers at once on a fresh machine: one compiles, the other waits for it and loads its library.
    A stand-in compiler (it copies the library already built) counts its calls and takes a second."""
    assert kernels.word2vec_step() is not None
    count = tmp_path / "compiles"
    compiler = tmp_path / "cxx.sh"
    compiler.write_text(
        f'echo x >> "{count}"; sleep 1\n'
        f'while [ $# -gt 0 ]; do [ "$1" = -o ] && cp "{kernels.library_path()}" "$2"; shift; done\n',
        encoding="utf-8",
    )
    env = {**os.environ, "CXX": f"sh {compiler}", "WORD2BERT_CACHE": str(tmp_path / "cache")}
    code = "from word2bert import kernels; assert kernels.word2vec_step() is not None; print(kernels.library_path())"
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in "ab"]
    outputs = [run.communicate(timeout=300)[0].strip() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], "a process could not load the kernel"
    assert outputs[0] == outputs[1] and outputs[0].startswith(str(tmp_path / "cache"))
    assert count.read_text(encoding="utf-8").count("x") == 1, "both processes compiled the kernel"
    assert [p.name for p in (tmp_path / "cache" / "kernels").iterdir() if not p.name.endswith(".lock")] == [
        os.path.basename(outputs[0])
    ], "a temporary build folder was left behind"


@needs_compiler
def test_the_kernel_refuses_ids_outside_the_tables():
    """It writes where the ids point: a word id past the tables, or a bag past the rows, is an error, not a write
    into memory beyond them."""
    model = w2v.Word2VecModel(10, 8)
    before = [p.clone() for p in model.parameters()]
    inputs, targets, noise = torch.tensor([1, 2]), torch.tensor([3, 10]), torch.tensor([[4], [5]])
    with pytest.raises(RuntimeError, match="outside the tables"):
        model.fused_sgd_steps(inputs, targets, noise, None, [0.1], 2)
    mask = torch.tensor([[True, True], [True, False]])
    with pytest.raises(RuntimeError, match="one learning rate per batch"):
        model.fused_sgd_steps(torch.tensor([[1, 2], [3, 4]]), targets.clamp(max=9), noise, mask, [0.1], 1)
    for p, start in zip(model.parameters(), before):
        assert torch.equal(p, start), "a refused call changed the tables"
