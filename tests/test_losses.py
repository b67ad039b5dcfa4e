"""The fused output-layer cross-entropy (word2bert.losses) is F.cross_entropy of the layer's logits: value and
gradients, with a bias, ignored targets and a tied weight."""

import pytest
import torch
import torch.nn.functional as F

from word2bert import bert, gpt
from word2bert.losses import linear_cross_entropy


def plain(x, weight, targets, bias=None, ignore_index=-100):
    return F.cross_entropy(F.linear(x, weight, bias), targets, ignore_index=ignore_index)


@pytest.mark.parametrize("with_bias", [False, True])
def test_gradients_are_the_analytic_ones(with_bias):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, dtype=torch.double, generator=g, requires_grad=True)
    weight = torch.randn(11, 5, dtype=torch.double, generator=g, requires_grad=True)
    bias = torch.randn(11, dtype=torch.double, generator=g, requires_grad=True) if with_bias else None
    targets = torch.tensor([3, -100, 0, 10, 3, -100, 7])
    assert torch.autograd.gradcheck(lambda x, w, b: linear_cross_entropy(x, w, targets, b), (x, weight, bias))


def test_same_loss_and_gradients_as_cross_entropy_of_the_logits():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(50, 16)  # the output layer's weight tied to the input embedding, as in GPT
    bias = torch.nn.Parameter(torch.randn(50))
    ids = torch.randint(0, 50, (4, 9))
    targets = torch.randint(0, 50, (4, 9)).masked_fill(torch.rand(4, 9) < 0.3, -100)
    results = []
    for loss_fn in (plain, linear_cross_entropy):
        embedding.weight.grad = bias.grad = None
        hidden = torch.tanh(embedding(ids))[:, 1:]  # a non-contiguous view, as GPT's hidden states without the last
        loss = loss_fn(hidden.flatten(0, 1), embedding.weight, targets[:, 1:].flatten(), bias)
        loss.backward()
        results.append((loss.detach(), embedding.weight.grad.clone(), bias.grad.clone()))
    for want, got in zip(*results):
        torch.testing.assert_close(got, want)


def test_nothing_to_predict_is_nan_as_with_cross_entropy():
    x, weight = torch.randn(3, 4), torch.randn(6, 4)
    targets = torch.full((3,), -100)
    assert plain(x, weight, targets).isnan() and linear_cross_entropy(x, weight, targets).isnan()


def test_gpt_loss_is_cross_entropy_of_its_logits():
    torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(vocab_size=40, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.0))
    ids = torch.randint(0, 40, (3, 12))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[0, :4] = 0  # left padding
    targets = ids[:, 1:].masked_fill((mask[:, :-1] == 0) | (mask[:, 1:] == 0), -100)
    want = F.cross_entropy(model(ids, mask)[:, :-1].flatten(0, 1), targets.flatten(), ignore_index=-100)
    torch.testing.assert_close(model.loss(ids, mask), want)


def test_bert_pretraining_loss_is_cross_entropy_of_its_prediction_logits():
    """From the masked positions alone: the same loss and gradients as every position's logits with -100 labels."""
    torch.manual_seed(0)
    model = bert.BertForPreTraining(bert.BertConfig(vocab_size=60, hidden_size=16, num_attention_heads=2, dropout=0.0))
    ids = torch.randint(0, 60, (3, 10))
    labels = ids.masked_fill(torch.rand(3, 10) > 0.3, -100)
    nsp = torch.tensor([0, 1, 1])
    results = []
    for fused in (True, False):
        model.zero_grad()
        out = model(ids, labels=labels, next_sentence_label=nsp)
        if not fused:
            out.loss = F.cross_entropy(out.prediction_logits.flatten(0, 1), labels.flatten()) + F.cross_entropy(
                out.seq_relationship_logits, nsp
            )
        out.loss.backward()
        results.append([out.loss.detach()] + [p.grad.clone() for p in model.parameters()])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want)


def tiny_bert(vocab=60):
    torch.manual_seed(0)
    config = bert.BertConfig(vocab_size=vocab, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, dropout=0.0)
    return bert.BertForPreTraining(config)


def pretraining_batch(vocab=60, masked=0.3):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, vocab, (4, 12), generator=g)
    attention_mask = torch.ones_like(ids)
    attention_mask[1, 8:] = attention_mask[3, 5:] = 0  # right padding, never masked
    labels = ids.masked_fill((torch.rand(4, 12, generator=g) > masked) | (attention_mask == 0), -100)
    return {
        "input_ids": ids,
        "token_type_ids": (torch.arange(12) >= 6).long().expand(4, 12),
        "attention_mask": attention_mask,
        "labels": labels,
        "next_sentence_label": torch.tensor([0, 1, 1, 0]),
    }


def loss_and_gradients(model, loss_fn, batch):
    model.zero_grad(set_to_none=True)
    loss = loss_fn(batch)
    loss.backward()
    return [loss.detach()] + [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("sentence", ["NSP", "SOP", "MLM_ONLY"])
def test_the_loop_trains_the_plain_pretraining_loss(sentence):
    """PretrainingObjective, the loss ``pretrain`` runs, is the fast one (``BertForPreTraining.loss``), and its value
    and gradients are those of the pre-training loss written plainly: the cross-entropy of every position's MLM
    logits with -100 labels, plus the [CLS] classifier's cross-entropy where the sentence objective is trained."""
    from word2bert import pretraining_data
    from word2bert.pretraining import PretrainingObjective

    objective = getattr(pretraining_data, sentence)
    model, batch = tiny_bert(), pretraining_batch()

    def plain_loss(b):
        out = model(b["input_ids"], b["token_type_ids"], b["attention_mask"])
        loss = F.cross_entropy(out.prediction_logits.flatten(0, 1), b["labels"].flatten())
        if objective.trained:
            loss = loss + F.cross_entropy(out.seq_relationship_logits, b["next_sentence_label"])
        return loss

    fast = loss_and_gradients(model, lambda b: PretrainingObjective(model, objective)(**b), batch)
    want = loss_and_gradients(model, plain_loss, batch)
    assert not objective.trained or want[-1].abs().sum() > 0, "the classifier's gradient is checked too"
    for got, expected in zip(fast, want):
        torch.testing.assert_close(got, expected)


def test_a_batch_with_nothing_masked_adds_no_mlm_loss():
    """Masks are drawn at random, so a small batch may have none: MLM's term is then 0 with zero gradients (the
    mean over no position would be NaN, and one NaN step ruins every weight)."""
    from word2bert.pretraining import PretrainingObjective
    from word2bert.pretraining_data import MLM_ONLY, NSP

    model, batch = tiny_bert(), pretraining_batch(masked=0.0)
    assert (batch["labels"] == -100).all()
    loss, *grads = loss_and_gradients(model, lambda b: PretrainingObjective(model, MLM_ONLY)(**b), batch)
    assert loss == 0 and all(not g.any() for g in grads)
    nsp = loss_and_gradients(model, lambda b: PretrainingObjective(model, NSP)(**b), batch)[0]
    out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    torch.testing.assert_close(nsp, F.cross_entropy(out.seq_relationship_logits, batch["next_sentence_label"]))


def test_the_pretraining_loss_under_bf16_autocast_is_the_plain_one_to_bf16_rounding():
    """Under autocast (a GPU's bf16, here the CPU's) the fast loss takes its softmax in float32, as the plain loss's
    cross-entropy does: the two agree to bf16's rounding of the logits."""
    from word2bert.pretraining import PretrainingObjective

    model, batch = tiny_bert(), pretraining_batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fast = PretrainingObjective(model)(**batch)
        out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        plain_loss = F.cross_entropy(out.prediction_logits.flatten(0, 1).float(), batch["labels"].flatten())
        plain_loss = plain_loss + F.cross_entropy(out.seq_relationship_logits.float(), batch["next_sentence_label"])
    assert fast.dtype == torch.float32
    torch.testing.assert_close(fast, plain_loss, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("two_towers", [False, True])
def test_the_ablation_language_models_loss_is_the_plain_one(two_towers):
    """The objective ablation's left-to-right and two-tower LMs train through the same fast output layer
    (``MLMHead.loss``): the loss and gradients of the plain cross-entropy of their logits."""
    from word2bert.objectives import CAUSAL_LM, TWO_TOWER_LM

    objective = TWO_TOWER_LM if two_towers else CAUSAL_LM
    torch.manual_seed(0)
    config = bert.BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, dropout=0.0)
    model, batch = objective.model(config, None), pretraining_batch()
    ids, mask = batch["input_ids"], batch["attention_mask"]
    both = mask[:, :-1].bool() & mask[:, 1:].bool()

    def plain_loss(b):
        states = model.bert.contextualize(model.bert.embeddings(ids, b["token_type_ids"]), mask)[-1]
        loss = F.cross_entropy(model.mlm(states[:, :-1, :16][both]), ids[:, 1:][both])
        if two_towers:
            loss = loss + F.cross_entropy(model.mlm(states[:, 1:, 16:][both]), ids[:, :-1][both])
        return loss

    fast = loss_and_gradients(model, lambda b: objective.loss(model)(**b), batch)
    for got, expected in zip(fast, loss_and_gradients(model, plain_loss, batch)):
        torch.testing.assert_close(got, expected)
