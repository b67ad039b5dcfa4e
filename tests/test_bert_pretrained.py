"""Every committed BERT checkpoint loads with the current code, has its model card, and still scores what the card
says on the held-out pre-training instances."""

import re
import shlex
from pathlib import Path

import pytest
import torch

from word2bert import bert
from word2bert.data import wordnet_available
from word2bert.pretraining import eval_batches, evaluate_pretraining
from word2bert.recipes import options
from word2bert.recipes.bert import BertRecipe

CHECKPOINTS = sorted(Path(bert.CHECKPOINT).parent.glob("bert*.safetensors"))


def test_the_course_checkpoint_is_committed():
    assert bert.CHECKPOINT in CHECKPOINTS


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
def test_checkpoint_loads_and_embeds(path):
    model = bert.load(path, device="cpu")
    assert isinstance(model, bert.BertForPreTraining) and model.tokenizer is not None
    assert model.config.vocab_size == model.tokenizer.vocab_size
    vectors = model.embed_sentence(["the", "mouse", "ate", "the", "cheese", "."])
    assert vectors.shape == (model.config.num_hidden_layers + 1, 6, model.config.hidden_size)
    assert torch.isfinite(vectors).all()
    assert path.stat().st_size < 10_000_000, "a few MB at most"


def card(path: Path) -> str:
    return path.with_suffix(".md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", CHECKPOINTS, ids=lambda p: p.name)
def test_model_card_has_data_config_command_metrics(path):
    text = card(path)
    for section in ("## Data", "## Configuration", "## Command", "## Metrics"):
        assert section in text
    config = bert.load(path, device="cpu").config
    assert f"Model: `{config}`" in text, "the card describes the committed weights' configuration"


@pytest.mark.slow
@pytest.mark.committed
def test_pretrained_matches_its_card_on_held_out_instances():
    text = card(bert.CHECKPOINT)
    command = re.search(r"```bash\n(.+)\n```", text).group(1)
    recipe = options.parse(BertRecipe, shlex.split(command.split("pretrain_bert", 1)[1]))
    if recipe.wordnet_fraction > 0 and not wordnet_available():
        pytest.skip("the checkpoint was trained with WordNet text, which is not installed here")
    model = bert.pretrained(device="cpu")
    held_out = recipe.held_out_instances(model.tokenizer)
    metrics = evaluate_pretraining(model, eval_batches(held_out, model.tokenizer), device="cpu")
    for name in ("MLM accuracy", "NSP accuracy"):
        claimed = float(re.search(rf"- {name}: ([0-9.]+)", text).group(1))
        key = name.split()[0].lower() + "_accuracy"
        assert abs(metrics[key] - claimed) < 0.01, (
            f"{name}: the card says {claimed}, the checkpoint gives {metrics[key]}"
        )
    assert metrics["mlm_accuracy"] > 0.2, "above the ~0.12 of always guessing the most frequent piece"


def test_pretrained_fills_a_blank():
    from word2bert.bert import fill_mask

    (top,) = fill_mask(bert.pretrained(device="cpu"), "alice paddled a canoe down the [MASK] .", top_k=5)
    assert {"river", "stream", "creek", "lake"} & {piece for piece, _ in top}
    assert all(0 <= p <= 1 for _, p in top) and [p for _, p in top] == sorted((p for _, p in top), reverse=True)
