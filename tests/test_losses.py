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
