"""``word2bert.recipes.english_curve``, whose committed curve the comparison page reads (the page checks, in hidden
asserts, that each run is a point of the grid with its model's sizes and the benchmarks' chance levels, and what its
text says of them). Here the script runs at a tiny grid point: the run it writes holds every number the page reads,
and it replaces only the run of its own point."""

from __future__ import annotations

import json
import math

import pytest

from word2bert.bert import BertConfig, BertForPreTraining, count_parameters
from word2bert.data import WordNet, plain_sense_occurrences, wordnet_available
from word2bert.probes import chance_level
from word2bert.recipes import english_curve
from word2bert.scripts import english_curve as script

TINY = (200, 16, 8000, 10, 4, 1e-3)  # vocabulary, width, words, steps on 64 pieces, batch, learning rate


@pytest.mark.slow
@pytest.mark.skipif(not wordnet_available(), reason="WordNet 3.0 is not installed (make setup)")
def test_main_writes_a_run_with_every_number_the_page_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(english_curve, "GRID", [*english_curve.GRID, TINY])
    results = tmp_path / "english_curve.json"
    other = {**dict(zip(english_curve.KEY, english_curve.GRID[0])), "kept": True}
    stale = {**dict(zip(english_curve.KEY, TINY)), "kept": False}
    results.write_text(json.dumps({"runs": [other, stale], "reference": {"kept": True}}), encoding="utf-8")
    point = str(len(english_curve.GRID) - 1)
    returned = script.main(["--points", point, "--results", str(results), "--threads", "1", "--no-reference"])
    written = json.loads(results.read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(returned)), "the file holds what main returns"
    assert written["reference"] == {"kept": True} and written["runs"][0] == other, "other points are kept"
    (run,) = written["runs"][1:]
    assert "kept" not in run and tuple(run[k] for k in english_curve.KEY) == TINY, "its own point is replaced"
    assert run["steps"] == 11 and run["english_fraction"] == 0.5 and run["device"] in ("cpu", "cuda", "mps")
    sizes = BertConfig(
        vocab_size=run["vocab_size"],
        hidden_size=run["hidden"],
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=4 * run["hidden"],
        max_position_embeddings=128,
    )
    assert run["parameters"] == count_parameters(BertForPreTraining(sizes)), "the sizes the page reads are the model's"
    for probe in ("wordnet", "plain", "toy_world"):
        scores = run["probes"][probe]
        assert len(scores["mean"]) == len(scores["std"]) == 5, "the embeddings and four blocks"
        assert all(0 <= m <= 1 for m in scores["mean"]), (probe, scores)
    assert run["chance"] == {
        "wordnet": pytest.approx(chance_level(WordNet().sense_occurrences(pos=None))),
        "plain": pytest.approx(chance_level(plain_sense_occurrences())),
    }
    assert math.isfinite(run["final_train_loss"]) and run["minutes"] > 0
