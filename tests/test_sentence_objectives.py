"""``word2bert.scripts.sentence_objectives``, the comparison of MLM alone, MLM + NSP and MLM + SOP whose committed
results chapter 4's pre-training page reads (the page checks, in hidden asserts, what it says of them; and
``make test-experiments`` re-trains their MLM alone of seed 0). Here the script itself runs, on a tiny
config: it writes every objective and seed, with every number the page reads."""

from __future__ import annotations

import json
import math
import shlex

import pytest
from helpers import TINY_PRETRAINING

from word2bert.recipes import options
from word2bert.recipes import sentence_objectives as so
from word2bert.scripts import sentence_objectives as script


@pytest.mark.slow
def test_main_writes_every_objective_and_seed_with_what_the_page_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(so, "NLI", so.NLI.__class__(**{**vars(so.NLI), "n_train": 16, "n_test": 8, "steps": 2}))
    monkeypatch.setattr(so, "QA", so.QA.__class__(**{**vars(so.QA), "n_train": 16, "n_test": 8, "steps": 2}))
    out = tmp_path / "results.json"
    argv = ["--seeds", "0", "1", "--results", str(out), *TINY_PRETRAINING]
    returned = script.main(argv)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(returned)), "the file holds what main returns"
    recipe = options.parse(so.SentenceObjectivesRecipe, argv)
    assert written["command"] == options.command(so.SentenceObjectivesRecipe.script, recipe)
    assert options.parse(so.SentenceObjectivesRecipe, shlex.split(written["command"])[3:]) == recipe
    settings = written["settings"]
    assert settings["phases"] == [[64, 6], [128, 2]] and settings["vocab_size"] <= 200
    assert settings["finetune"]["nli"]["n_train"] == 16 and settings["finetune"]["qa"]["steps"] == 2
    runs = written["runs"]
    assert [(r["objective"], r["seed"]) for r in runs] == [(o, s) for s in (0, 1) for o in so.OBJECTIVES]
    for r in runs:
        trained = r["objective"] != "MLM alone"
        for key in ("mlm_accuracy", "nli_accuracy", "qa_exact_match", "qa_f1"):
            assert 0 <= r[key] <= 1, (r["objective"], key, r[key])
        for key in ("nsp_accuracy", "sop_accuracy"):
            assert (r[key] is not None) == trained and (not trained or 0 <= r[key] <= 1), (r["objective"], key)
        assert 1 <= len(r["loss_curve"]) <= 8 and all(math.isfinite(x) for x in r["loss_curve"])
        assert r["loss_curve"][0] == pytest.approx(math.log(settings["vocab_size"]), abs=1.5), "starts untrained"
        assert 0 < r["pretraining_minutes"] <= r["minutes"]
