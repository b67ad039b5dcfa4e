"""The committed GPT checkpoint and the recipe and script that train it.

The checkpoint must load with today's code and give the numbers its model card reports; the script must run
end to end on a tiny configuration and lower the loss; and the model's vectors must show what chapter 3
teaches: sense cues to the left of a word are used, cues to its right are not.
"""

import math
import re

import pytest
import torch
from helpers import card_corpus

from word2bert import gpt
from word2bert.probes import sense_probe
from word2bert.recipes import options
from word2bert.recipes.base import save_card
from word2bert.recipes.gpt import GPTRecipe, held_out_templates
from word2bert.scripts import train_gpt

# Sense accuracy of the committed checkpoint on held-out templates (sense_probe, seeds 0-2, see gpt.md): top
# block 0.986 with the cue on the left, 0.528 with the cue on the right; at no layer does a right-hand cue lift
# the score above 0.528 (chance is 0.5). The test asks for a gap of 0.15, well inside the measured 0.46 (0.28 for
# the first, smaller checkpoint), and for right-cue scores below 0.6.
GAP = 0.15
RIGHT_CEILING = 0.6


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Hundreds of one-sentence forward passes: one thread beats two that wait for each other on shared cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model():
    return gpt.pretrained(device="cpu")


@pytest.fixture(scope="module")
def card():
    return gpt.CHECKPOINT.with_suffix(".md").read_text(encoding="utf-8")


def test_checkpoint_is_small_and_described_by_its_card(model, card):
    assert gpt.CHECKPOINT.stat().st_size < 8e6, "the committed checkpoint should stay a few MB"
    assert str(model.config) in card, "the model card describes another configuration"
    assert "python -m word2bert.scripts.train_gpt" in card


@pytest.mark.slow
@pytest.mark.committed
def test_checkpoint_gives_the_held_out_loss_of_its_card(model, card):
    """Loading with the current code reproduces the loss measured when the checkpoint was trained."""
    num_tokens, seed = card_corpus(card)
    reported = float(re.search(r"Held-out templates: loss ([\d.]+)", card).group(1))
    stream = gpt.token_stream(model.tokenizer, held_out_templates(num_tokens, seed))
    loss = gpt.next_token_loss(model, gpt.windows(stream, model.config.block_size), 64, torch.device("cpu"))
    assert loss == pytest.approx(reported, abs=2e-3)


def test_pretrained_generates(model):
    prompt = torch.tensor([model.tokenizer.encode("the cat chased a")])
    out = model.generate(prompt, 12, temperature=0.8, generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, prompt.shape[1] + 12)
    assert torch.equal(out[:, : prompt.shape[1]], prompt)
    again = model.generate(prompt, 12, temperature=0.8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out, again), "a seeded generator must give the same sample"
    text = model.tokenizer.decode(out[0].tolist())
    assert text.startswith("the cat chased a")


def test_embed_sentence_has_one_vector_per_layer_and_word(model):
    words = "the bright student solved the puzzle .".split()
    vectors = model.embed_sentence(words)
    assert vectors.shape == (model.config.n_layer + 1, len(words), model.config.n_embd)
    assert torch.isfinite(vectors).all()


def test_train_gpt_runs_and_lowers_the_loss(tmp_path):
    out = tmp_path / "gpt.safetensors"
    argv = [
        "--num-tokens",
        "20000",
        "--wordnet-fraction",
        "0",
        "--vocab-size",
        "300",
        "--layers",
        "1",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--block-size",
        "32",
        "--steps",
        "30",
        "--batch-size",
        "8",
        "--lr",
        "3e-3",
        "--warmup-steps",
        "5",
        "--threads",
        "1",
        "--out",
        str(out),
    ]
    metrics = train_gpt.main(argv)
    assert len(metrics["history"]) == 30
    for name, loss in metrics["loss"].items():
        assert loss < metrics["initial_loss"][name] - 0.5, f"{name}: the loss did not fall"
    assert metrics["initial_loss"]["held-out documents"] == pytest.approx(math.log(300), abs=0.2)
    loaded = gpt.load(out, device="cpu")
    assert loaded.config.vocab_size == loaded.tokenizer.vocab_size == 300
    card = out.with_suffix(".md").read_text(encoding="utf-8")
    assert options.command(GPTRecipe.script, options.parse(GPTRecipe, argv)) in card and str(loaded.config) in card


def test_a_new_card_keeps_the_history_of_the_old_one(tmp_path):
    """The "Changes" section that ends a card is written by hand; a run that rewrites the card keeps it."""
    checkpoint = tmp_path / "model.safetensors"
    checkpoint.write_bytes(b"weights")
    card = dict(name="M", summary="A model.", data=[], config="MConfig()", parameters=1, configuration=[])
    path = save_card(checkpoint, **card, command="python -m word2bert.scripts.m", metrics=["Loss: 2.0"])
    history = "## Changes\n- 2026-01-01: the first checkpoint.\n"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + history, encoding="utf-8")
    save_card(checkpoint, **card, command="python -m word2bert.scripts.m", metrics=["Loss: 1.0"])
    text = path.read_text(encoding="utf-8")
    assert "Loss: 1.0" in text and "Loss: 2.0" not in text
    assert text.endswith("\n\n" + history) and text.count("## Changes") == 1


@pytest.mark.slow
def test_left_cues_are_used_and_right_cues_are_not(model):
    left, right = sense_probe(model, cue="left").mean, sense_probe(model, cue="right").mean
    assert left[-1] - right[-1] >= GAP, f"top block: left {left[-1]:.3f}, right {right[-1]:.3f}"
    assert max(right) < RIGHT_CEILING, f"a cue after the word should not help: right-cue scores {right}"
