"""The objective ablation's encoders and losses (``word2bert.objectives``): what each position may see, what each
loss predicts, and that the models fine-tune and round-trip like the course's BERT."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from word2bert import finetune as ft
from word2bert.bert import Bert, BertConfig, BertForPreTraining
from word2bert.objectives import CAUSAL_LM, MLM, TWO_TOWER_LM, WORD_OBJECTIVES, CausalBert, TwoTowerBert, load, save
from word2bert.pretraining import PretrainConfig, pretrain
from word2bert.pretraining_data import MLM_ONLY, create_pretraining_instances, tokenize_documents
from word2bert.training import TrainConfig
from word2bert.wordpiece import WordPieceTokenizer

H = 32


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    text = ["the mouse likes cheese", "buy a new mouse for your computer", "i want to eat an apple"] * 20
    return WordPieceTokenizer.train(text, 120, progress=False)


def tiny(objective, tokenizer, seed=0) -> BertForPreTraining:
    torch.manual_seed(seed)
    config = BertConfig(tokenizer.vocab_size, H, 2, 2, 64, max_position_embeddings=32, dropout=0.0)
    return objective.model(config, tokenizer).eval()


def batch(tokenizer, T=10, pad_from=7):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, tokenizer.vocab_size, (2, T), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, pad_from:] = 0
    ids[1, pad_from:] = tokenizer.pad_id
    return ids, torch.zeros_like(ids), mask


def changed_positions(model, tokenizer, where: int) -> torch.Tensor:
    """[B, T, D] bool: which output values move when the piece at ``where`` changes, every layer checked."""
    ids, types, mask = batch(tokenizer)
    other = ids.clone()
    other[:, where] = (other[:, where] + 1) % tokenizer.vocab_size
    a = model.bert.contextualize(model.bert.embeddings(ids, types), mask)
    b = model.bert.contextualize(model.bert.embeddings(other, types), mask)
    return torch.stack([(x - y).abs() > 1e-6 for x, y in zip(a, b)]).any(0)


def test_a_causal_block_sees_only_its_left(tokenizer):
    moved = changed_positions(tiny(CAUSAL_LM, tokenizer), tokenizer, where=4)[0].any(-1)
    assert not moved[:4].any(), "a piece's vector moved when a piece to its right changed: the mask leaks"
    assert moved[4:].all(), "the changed piece and those after it must see it"


def test_the_two_towers_read_one_direction_each(tokenizer):
    moved = changed_positions(tiny(TWO_TOWER_LM, tokenizer), tokenizer, where=4)[0]
    forward, backward = moved[:, :H].any(-1), moved[:, H:].any(-1)
    assert not forward[:4].any() and forward[4:].all(), "the forward tower must see only the left and itself"
    assert not backward[5:].any() and backward[:5].all(), "the backward tower must see only the right and itself"


def test_mlm_blocks_see_both_sides(tokenizer):
    assert changed_positions(tiny(MLM, tokenizer), tokenizer, where=4)[0].any(-1).all()


@pytest.mark.parametrize("objective", [CAUSAL_LM, TWO_TOWER_LM], ids=str)
def test_position_0_carries_what_has_read_everything(objective, tokenizer):
    """The heads read position 0 (BERT's [CLS]); for a causal encoder it carries the last real piece's vector,
    padding excluded, and a change anywhere in the input reaches it."""
    model = tiny(objective, tokenizer)
    ids, types, mask = batch(tokenizer)
    out = model.bert(ids, types, mask, output_hidden_states=True)
    raw = model.bert.contextualize(model.bert.embeddings(ids, types), mask)[-1]
    torch.testing.assert_close(out.last_hidden_state[1, 0, :H], raw[1, 6, :H])  # row 1's last piece is 6
    torch.testing.assert_close(out.last_hidden_state[0, 0, :H], raw[0, -1, :H])
    torch.testing.assert_close(out.last_hidden_state[:, 1:], raw[:, 1:])  # no word's vector changes
    for where in (1, 6):
        assert changed_positions_summary(model, tokenizer, where), f"position 0 does not see piece {where}"


def changed_positions_summary(model, tokenizer, where) -> bool:
    ids, types, mask = batch(tokenizer)
    other = ids.clone()
    other[:, where] = (other[:, where] + 1) % tokenizer.vocab_size
    a, b = model.bert(ids, types, mask).pooler_output, model.bert(other, types, mask).pooler_output
    return bool(((a - b).abs() > 1e-6).all(-1).any())


@pytest.mark.parametrize("objective", [CAUSAL_LM, TWO_TOWER_LM], ids=str)
def test_the_language_model_loss_predicts_the_neighbours(objective, tokenizer):
    """The loss is the cross-entropy of the next piece from each forward vector (and of the previous piece from
    each backward one), over pairs of real pieces only, computed here the slow way, row by row."""
    model = tiny(objective, tokenizer)
    ids, types, mask = batch(tokenizer)
    loss = objective.loss(model, MLM_ONLY)(ids, types, mask)
    states = model.bert.contextualize(model.bert.embeddings(ids, types), mask)[-1]
    logits = model.mlm(states[..., :H]), model.mlm(states[..., H:]) if objective is TWO_TOWER_LM else None
    next_terms, previous_terms = [], []
    for row in range(2):
        n = int(mask[row].sum())
        next_terms.append(F.cross_entropy(logits[0][row, : n - 1], ids[row, 1:n], reduction="none"))
        if logits[1] is not None:
            previous_terms.append(F.cross_entropy(logits[1][row, 1:n], ids[row, : n - 1], reduction="none"))
    expected = torch.cat(next_terms).mean()
    if previous_terms:
        expected = expected + torch.cat(previous_terms).mean()
    torch.testing.assert_close(loss, expected)


def test_the_mlm_model_is_the_course_bert(tokenizer):
    """MLM's model is BertForPreTraining as chapter 4 builds it: the same weights from the same seed."""
    ours = tiny(MLM, tokenizer)
    torch.manual_seed(0)
    plain = BertForPreTraining(ours.config, tokenizer)
    assert type(ours.bert) is Bert
    for (name, a), b in zip(ours.state_dict().items(), plain.state_dict().values()):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("objective", list(WORD_OBJECTIVES.values()), ids=str)
def test_each_objective_trains_fine_tunes_and_round_trips(objective, tokenizer, tmp_path):
    """A few steps of pre-training lower the loss; every task's head fits the encoder's width; a half-precision
    checkpoint rebuilds the same encoder (the objective in its metadata) to fp16 rounding."""
    model = tiny(objective, tokenizer)
    documents = [[s.split()] * 3 for s in ("the mouse likes cheese", "buy a new mouse for your computer")] * 4
    instances = create_pretraining_instances(tokenize_documents(tokenizer, documents), 16, 0, objective=MLM_ONLY)
    config = PretrainConfig(
        train=TrainConfig(steps=30, lr=3e-3, warmup_steps=3, schedule="linear"),
        batch_size=4,
        mlm_probability=objective.mlm_probability,
        eval_every=0,
        objective=MLM_ONLY,
        loss=objective.loss,
    )
    losses = pretrain(model, instances, tokenizer, config).losses
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3, f"{objective} did not learn: {losses[:5]} {losses[-5:]}"
    width = model.bert.pooler.in_features
    assert width == (2 * H if objective is TWO_TOWER_LM else H)
    for task in ft.TASKS.values():
        head = task.make_head(model.bert)
        assert next(iter(head.parameters())).shape[-1] == width, task
    path = save(model, objective, tmp_path / "model.safetensors")
    again = load(path)
    assert type(again.bert) is type(model.bert)
    ids, types, mask = batch(tokenizer)
    torch.testing.assert_close(
        again.bert(ids, types, mask).last_hidden_state,
        model.bert(ids, types, mask).last_hidden_state,
        atol=2e-2,
        rtol=0,
    )
    assert isinstance(again.bert, (Bert, CausalBert, TwoTowerBert))
