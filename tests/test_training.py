"""Shared training utilities: weight-decay groups, schedules, clipping, the train loop, progress bars."""

import os
import subprocess
import sys
import time

import pytest
import torch
from torch import nn

from word2bert.training import (
    TrainConfig,
    make_optimizer,
    param_groups,
    train,
    train_step,
    warmup_cosine,
    warmup_linear,
)


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.lin = nn.Linear(4, 4)
        self.ln = nn.LayerNorm(4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight  # tied, as GPT's and BERT's output layers


def test_weight_decay_only_on_matrices_of_linear_layers():
    m = Tiny()
    decay, rest = param_groups(m, 0.1)
    assert decay["weight_decay"] == 0.1 and rest["weight_decay"] == 0.0
    assert [id(p) for p in decay["params"]] == [id(m.lin.weight)]
    assert {id(p) for p in rest["params"]} == {
        id(m.emb.weight),
        id(m.lin.bias),
        id(m.ln.weight),
        id(m.ln.bias),
    }
    assert len(rest["params"]) == 4  # the tied weight only once


def test_schedules_warm_up_linearly_then_decay_to_zero():
    assert [warmup_cosine(s, 4, 10) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert warmup_cosine(4, 4, 10) == 1.0
    assert warmup_cosine(7, 4, 10) == pytest.approx(0.5)  # halfway through the cosine
    assert warmup_cosine(10, 4, 10) == pytest.approx(0.0)
    assert warmup_cosine(10, 4, 10, min_ratio=0.1) == pytest.approx(0.1)
    assert [warmup_linear(s, 2, 6) for s in range(7)] == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]


def test_scheduler_sets_the_learning_rate_of_every_group():
    m = Tiny()
    opt, sched = make_optimizer(m, TrainConfig(steps=10, lr=1e-3, warmup_steps=4, schedule="linear"))
    assert [g["lr"] for g in opt.param_groups] == [pytest.approx(2.5e-4)] * 2
    for _ in range(4):
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-3)


def test_gradient_clipping_bounds_the_update():
    torch.manual_seed(0)
    m = nn.Linear(8, 1)
    before = [p.detach().clone() for p in m.parameters()]
    opt = torch.optim.SGD(m.parameters(), lr=1.0)
    batch = torch.randn(16, 8) * 100
    train_step(m, batch, lambda model, x: model(x).pow(2).mean(), opt, grad_clip=1e-3)
    step = torch.cat([(p.detach() - b).flatten() for p, b in zip(m.parameters(), before)])
    assert step.norm() == pytest.approx(1e-3, rel=1e-3)


def test_train_lowers_the_loss_and_reports_every_step():
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = x @ torch.randn(5, 1)
    batches = [(x[i : i + 16], y[i : i + 16]) for i in range(0, 64, 16)]  # cycled: 4 batches, 40 steps
    model = nn.Linear(5, 1)
    seen = []  # what a callback sees: every step, numbered from 1, with its loss
    history = train(
        model,
        batches,
        lambda m, b: (m(b[0]) - b[1]).pow(2).mean(),
        TrainConfig(steps=40, lr=0.05, warmup_steps=5, weight_decay=0.0),
        device="cpu",
        callbacks=[lambda step, loss: seen.append((step, loss))],
    )
    assert len(history) == 40
    assert seen == list(enumerate(history, start=1))
    assert sum(history[-4:]) < 0.1 * sum(history[:4])


def test_train_refuses_an_exhausted_generator():
    with pytest.raises(ValueError, match="no batches"):
        train(nn.Linear(2, 1), iter([]), lambda m, b: m(b).sum(), TrainConfig(steps=2), device="cpu")


def progress_bar_stderr(**env: str) -> str:
    """What a shown and a hidden `progress_bar` write to stderr in a fresh interpreter (tqdm reads its TQDM_*
    variables when it is imported), with `env` added to an environment cleared of TQDM_* variables."""
    script = (
        "from word2bert.training import progress_bar\n"
        "for show in (True, False):\n"
        "    for _ in progress_bar(range(3), desc=f'show={show}', show=show):\n"
        "        pass\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")} | env
    done = subprocess.run([sys.executable, "-c", script], env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
def test_progress_bars_show_interactively_and_hide_in_the_book_build():
    """A bar is shown unless the caller hides it (`progress=False`) or TQDM_DISABLE=1 is set, as the book's
    build sets it (book/_ext/w2b_sphinx.py) so that no bar reaches a page."""
    interactive = progress_bar_stderr()
    assert "show=True: 100%|" in interactive, f"a shown bar wrote no finished bar: {interactive!r}"
    assert "show=False" not in interactive, f"a hidden bar was drawn: {interactive!r}"
    book_build = progress_bar_stderr(TQDM_DISABLE="1")
    assert "show=" not in book_build, f"TQDM_DISABLE=1 did not silence the bars: {book_build!r}"


@pytest.fixture
def fake_machine(monkeypatch):
    """Four cores this process may run on, none busy, no thread setting from the user, torch's default of four
    threads; the test changes what it needs. torch's own count comes back at the end."""
    from word2bert import device

    for name in ("W2B_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    machine = {"cores": 4, "busy": 0.0}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    monkeypatch.setattr(device.joblib, "cpu_count", lambda: machine["cores"])  # affinity and cgroup quota
    monkeypatch.setattr(device, "_busy_cores", lambda cpus: machine["busy"])
    previous = torch.get_num_threads()
    torch.set_num_threads(4)
    yield machine
    torch.set_num_threads(previous)


def test_the_default_is_one_thread_per_idle_core_this_process_may_use(fake_machine):
    from word2bert.device import cpu_threads

    assert cpu_threads() == 4, "a quiet machine: one thread per core"
    fake_machine["busy"] = 1.2
    assert cpu_threads() == 3, "1.2 cores busy: 2.8 idle, rounded"
    fake_machine["busy"] = 3.6
    assert cpu_threads() == 1
    fake_machine["busy"] = 7.0
    assert cpu_threads() == 1, "every core busy: one thread, never zero"
    fake_machine.update(busy=0.0, cores=2)
    assert cpu_threads() == 2, "a cgroup quota of two CPUs (a container's --cpus 2): two threads, not four"
    fake_machine["cores"] = 4
    torch.set_num_threads(2)
    assert cpu_threads() == 2, "torch.set_num_threads lowers the default"


def test_the_user_overrides_the_default(fake_machine, monkeypatch):
    from word2bert.device import cpu_threads

    fake_machine["busy"] = 4.0  # the default would say 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    torch.set_num_threads(3)  # what torch read from OMP_NUM_THREADS at start-up
    assert cpu_threads() == 3, "the user's OMP_NUM_THREADS wins over the default"
    monkeypatch.setenv("W2B_THREADS", "2")
    assert cpu_threads() == 2, "W2B_THREADS wins over OMP_NUM_THREADS"
    assert cpu_threads(5) == 5, "the loop's argument (or TrainConfig.threads) wins over both"


def test_a_loop_runs_on_its_threads_and_gives_back_the_callers_count(fake_machine):
    from word2bert import device

    torch.set_num_threads(1)
    with device.training_threads(torch.device("cpu"), 2) as n:
        assert n == torch.get_num_threads() == 2
    assert torch.get_num_threads() == 1, "the caller's thread count must come back"
    with pytest.raises(RuntimeError), device.training_threads(torch.device("cpu"), 3):
        raise RuntimeError("a loop that fails")
    assert torch.get_num_threads() == 1, "... also when the loop fails"
    with device.training_threads(torch.device("meta"), 5) as n:  # another device: torch's threads untouched
        assert n == torch.get_num_threads() == 1

    seen = []
    model = nn.Linear(2, 1)

    def loss_fn(m, batch):
        seen.append(torch.get_num_threads())
        return m(batch).pow(2).mean()

    train(model, [torch.ones(3, 2)], loss_fn, TrainConfig(steps=2, warmup_steps=1, threads=3), "cpu", progress=False)
    assert seen == [3, 3] and torch.get_num_threads() == 1, "training.train: TrainConfig.threads, then given back"


def test_finetuning_passes_its_threads_to_the_loop(monkeypatch):
    from word2bert import bert, finetune
    from word2bert.wordpiece import WordPieceTokenizer

    class Stop(Exception):
        pass

    def loop(model, batches, loss_fn, config, *args, **kwargs):
        raise Stop(config.threads)

    monkeypatch.setattr(finetune, "train", loop)
    tokenizer = WordPieceTokenizer.train(["the cat sat on the mat"], 40, min_frequency=1, progress=False)
    encoder = bert.Bert(
        bert.BertConfig(
            vocab_size=len(tokenizer.vocab),
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=16,
        ),
        tokenizer,
    )
    with pytest.raises(Stop) as stopped:
        finetune.finetune("sentiment", encoder, finetune.FinetuneConfig(n_train=4, n_test=4, threads=2))
    assert stopped.value.args == (2,)


def test_busy_cores_sees_processes_that_keep_the_cores_busy():
    from word2bert.device import _busy_cores

    cpus = os.sched_getaffinity(0)
    spin = "import os, time\nos.sched_setaffinity(0, {%d})\nend = time.time() + 3\nwhile time.time() < end: pass"
    spinners = [subprocess.Popen([sys.executable, "-c", spin % cpu]) for cpu in cpus]
    try:
        time.sleep(1.0)  # started and spinning
        busy = _busy_cores(cpus, seconds=0.5)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert busy > len(cpus) - 0.5, f"{len(cpus)} cores kept busy, measured {busy:.2f}"
