"""The committed objective ablation (``word2bert.recipes.objective_ablation``), which the comparison chapter reports:
its numbers are complete, say what the chapter says, its MLM runs are the sentence-objective experiment's MLM
alone, the kept models give their numbers again, and the script writes all of it (on a tiny config). One run
re-trained at full size gives the numbers again: ``make test-experiments`` (marked ``experiment``; minutes, so not
in ``make test``)."""

from __future__ import annotations

import json
import statistics

import pytest
from helpers import TINY_PRETRAINING

from word2bert import finetune as ft
from word2bert.objectives import CAUSAL_LM, MLM, TWO_TOWER_LM, WORD_OBJECTIVES, load
from word2bert.recipes import objective_ablation as ablation
from word2bert.recipes import sentence_objectives as so
from word2bert.scripts import objective_ablation as ablation_script

PROBES = ("sense_left", "sense_right", "pos")


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(ablation.RESULTS.read_text(encoding="utf-8"))


def layer_means(runs: list[dict], objective, probe: str) -> list[float]:
    rows = [r["probes"][probe] for r in runs if r["objective"] == objective.name]
    return [statistics.mean(v) for v in zip(*rows)]


def test_every_objective_has_three_seeds_probes_curves_and_fine_tuning(committed):
    runs, layers = committed["runs"], committed["settings"]["layers"]
    for name in WORD_OBJECTIVES:
        seeds = sorted(r["seed"] for r in runs if r["objective"] == name)
        assert len(seeds) >= 3 and len(set(seeds)) == len(seeds), (name, seeds)
    for r in runs:
        assert r["loss_curve"][-1] < r["loss_curve"][0] - 1, f"{r['objective']} seed {r['seed']} did not learn"
        assert all(len(r["probes"][p]) == layers + 1 for p in PROBES)
        assert set(r["finetune"]) == set(ablation.FINETUNE), "every task is fine-tuned"
    assert set(committed["baselines"]) == set(ablation.FINETUNE)
    assert sum(n for _, n in committed["settings"]["phases"]) >= 1000


def test_the_mlm_runs_are_the_sentence_experiments_mlm_alone(committed):
    """Same data, vocabulary, instances, steps and seeds: the same model, so the same held-out MLM accuracy."""
    sentence_runs = json.loads(so.RESULTS.read_text(encoding="utf-8"))["runs"]
    for r in (r for r in committed["runs"] if r["objective"] == MLM.name):
        (twin,) = [s for s in sentence_runs if s["objective"] == "MLM alone" and s["seed"] == r["seed"]]
        assert r["mlm_accuracy"] == pytest.approx(twin["mlm_accuracy"], abs=0.01), r["seed"]


def test_what_the_chapter_says_holds_in_the_results(committed):
    """The comparison chapter's reading: the left-to-right LM is at chance on right cues in every contextual layer
    of every seed; the objectives that let the right side in are above it; at equal steps MLM separates senses
    and tags parts of speech least well; the two towers are above chance on both sides."""
    runs = committed["runs"]
    for r in (r for r in runs if r["objective"] == CAUSAL_LM.name):
        assert max(r["probes"]["sense_right"][1:]) < 0.58, f"seed {r['seed']}: right cues reached a causal model"
    causal_right = max(layer_means(runs, CAUSAL_LM, "sense_right")[1:])
    for objective in (MLM, TWO_TOWER_LM):
        assert max(layer_means(runs, objective, "sense_right")[1:]) > causal_right + 0.08, objective
    for probe in ("sense_left", "pos"):
        mlm = max(layer_means(runs, MLM, probe))
        assert all(max(layer_means(runs, o, probe)) > mlm + 0.05 for o in (CAUSAL_LM, TWO_TOWER_LM)), probe
    assert min(max(layer_means(runs, TWO_TOWER_LM, p)[1:]) for p in ("sense_left", "sense_right")) > 0.7


@pytest.mark.slow
@pytest.mark.committed
@pytest.mark.parametrize("objective", list(WORD_OBJECTIVES.values()), ids=str)
def test_the_kept_models_give_their_numbers_again(objective, committed):
    """Seed 0's model of each objective, from its committed half-precision checkpoint: the same probe scores per
    layer (within the few occurrences that fp16 rounding may move across a decision)."""
    model = load(ablation.checkpoint_path(objective), "cpu")
    (before,) = [r for r in committed["runs"] if r["objective"] == objective.name and r["seed"] == 0]
    again = ablation.probes(model)
    for probe in PROBES:
        assert again[probe] == pytest.approx(before["probes"][probe], abs=0.02), probe


@pytest.mark.slow
def test_main_writes_every_objective_with_what_the_chapter_reads(tmp_path, monkeypatch):
    """The script itself on a tiny config: every objective and seed, its probes per layer, fine-tuning, loss curve,
    and seed 0's model kept and loadable."""
    tiny = {task: ft.replace(c, n_train=16, n_test=8, steps=2) for task, c in ablation.FINETUNE.items()}
    monkeypatch.setattr(ablation, "FINETUNE", tiny)
    monkeypatch.setattr(
        ablation, "probes", lambda model: {p: [0.5] * (model.config.num_hidden_layers + 1) for p in PROBES}
    )
    out = tmp_path / "results.json"
    argv = ["--seeds", "0", "1", "--results", str(out), "--checkpoints", str(tmp_path), *TINY_PRETRAINING]
    returned = ablation_script.main(argv)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(returned)), "the file holds what main returns"
    assert written["settings"]["phases"] == [[64, 6], [128, 2]]
    runs = written["runs"]
    assert sorted((r["objective"], r["seed"]) for r in runs) == sorted((o, s) for s in (0, 1) for o in WORD_OBJECTIVES)
    for r in runs:
        assert set(r["finetune"]) == set(ablation.FINETUNE) and all(r["finetune"].values()), r["objective"]
        assert (r["mlm_accuracy"] is None) == (not WORD_OBJECTIVES[r["objective"]].mlm_probability)
        assert 1 <= len(r["loss_curve"]) <= 8 and r["loss_curve"][0] > 0
        assert all(len(r["probes"][p]) == 2 and all(0 <= x <= 1 for x in r["probes"][p]) for p in PROBES)
    assert set(written["baselines"]) == set(ablation.FINETUNE)
    for objective in WORD_OBJECTIVES.values():
        assert load(ablation.checkpoint_path(objective, tmp_path), "cpu").config.num_hidden_layers == 1


@pytest.mark.slow
@pytest.mark.experiment
@pytest.mark.committed
def test_one_run_is_re_measured(tmp_path, committed):
    """Seed 0 of MLM pre-trained again (about three minutes on one CPU thread), once for both committed
    experiments: this model is the ablation's MLM and the sentence-objective experiment's MLM alone. The same
    held-out MLM accuracy within 0.03, and probe scores within one seed's spread: 0.06 on average over the layers and
    0.12 at any one layer. Bit for bit, a run repeats on one machine, but another machine's floating-point kernels
    (or the same loss summed in another order: issue 52 made the loop's loss the fast one) train another sample of the
    same recipe, and the probes move as far as another seed's. Measured: MLM accuracy 0.1516, 0.1531 and, with the
    fast loss, 0.1461; seed 0 with the fast loss follows the committed loss curve for 9 of 41 points, then drifts,
    and its probes end 0.051 (left cue) and 0.033 (right cue) apart on average, 0.097 at most; the committed MLM
    seeds differ from each other by 0.025-0.041 on average and by up to 0.101 at one layer."""
    out = tmp_path / "results.json"
    ablation_script.main(
        ["--seeds", "0", "--objectives", MLM.name, "--no-finetune", "--threads", "1"]
        + ["--results", str(out), "--checkpoints", str(tmp_path)]
    )
    (again,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    (before,) = [r for r in committed["runs"] if r["objective"] == MLM.name and r["seed"] == 0]
    (sentence,) = [
        r for r in json.loads(so.RESULTS.read_text(encoding="utf-8"))["runs"] if r["objective"] == "MLM alone"
    ][:1]
    assert sentence["seed"] == 0
    assert again["mlm_accuracy"] == pytest.approx(sentence["mlm_accuracy"], abs=0.03)
    for probe in PROBES:
        gaps = [abs(a - b) for a, b in zip(again["probes"][probe], before["probes"][probe], strict=True)]
        assert sum(gaps) / len(gaps) < 0.06 and max(gaps) < 0.12, (
            probe,
            again["probes"][probe],
            before["probes"][probe],
        )
