"""The shared transformer pieces: the plain attention formula, and the fast module agreeing with it."""

import math

import pytest
import torch
from torch import nn

from word2bert.transformer import (
    FeedForward,
    KVCache,
    MultiHeadSelfAttention,
    attention,
    attention_weights,
    causal_mask,
    init_weights,
    padding_mask,
    use_plain_attention,
)


def test_attention_matches_the_formula_written_out():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 4, generator=g) for _ in range(3))
    expected = torch.zeros(3, 4)
    for i in range(3):
        scores = torch.tensor([q[i] @ k[j] / math.sqrt(4) for j in range(3)])
        w = scores.exp() / scores.exp().sum()
        expected[i] = sum(w[j] * v[j] for j in range(3))
    torch.testing.assert_close(attention(q, k, v), expected)


def test_zero_queries_attend_uniformly_and_masks_remove_keys():
    q, k = torch.zeros(2, 8), torch.randn(5, 8)
    torch.testing.assert_close(attention_weights(q, k), torch.full((2, 5), 0.2))
    mask = torch.tensor([True, True, False, True, False])
    w = attention_weights(q, k, mask)
    assert torch.equal(w[:, ~mask], torch.zeros(2, 2))
    torch.testing.assert_close(w[:, mask], torch.full((2, 3), 1 / 3))


def test_causal_mask_is_lower_triangular_and_aligned_to_the_last_keys():
    assert torch.equal(causal_mask(3, 3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]]).bool())
    # Two new queries after three cached keys sit at positions 3 and 4.
    assert torch.equal(causal_mask(2, 5), torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]).bool())


def test_fully_masked_rows_give_no_nan():
    q, k, v = torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)
    mask = torch.tensor([False, True, True])  # query 0 under a causal mask sees only the masked key 0
    out = attention(q, k, v, mask, causal=True)
    assert torch.isfinite(out).all()


def test_a_fully_masked_row_attends_uniformly():
    """What attention_weights promises for a query with every key masked: equal weights, not NaN."""
    q, k = torch.randn(2, 4, 8) * 10, torch.randn(2, 5, 8) * 10
    mask = torch.ones(2, 4, 5, dtype=torch.bool)
    mask[0, 1] = False  # every key of query 1 in the first batch
    mask[1, :, 3:] = False  # keys 3-4 for every query of the second
    weights = attention_weights(q, k, mask)
    assert torch.allclose(weights[0, 1], torch.full((5,), 0.2))
    assert torch.equal(weights[1, :, 3:], torch.zeros(4, 2)), "masked keys get no weight"
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4))


@pytest.mark.parametrize("causal", [False, True])
def test_fast_and_plain_multi_head_attention_agree(causal):
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(32, 4, causal=causal).eval()
    x = torch.randn(3, 7, 32)
    am = torch.ones(3, 7, dtype=torch.long)
    am[1, 5:] = 0
    am[2, :2] = 0
    for mask in (None, padding_mask(am)):
        fast = mha(x, mask)
        mha.fast = False
        plain = mha(x, mask)
        mha.fast = True
        rows = am.bool() if mask is not None else torch.ones(3, 7, dtype=torch.bool)
        torch.testing.assert_close(fast[rows], plain[rows], atol=1e-6, rtol=1e-5)


def test_kv_cache_gives_the_same_outputs_as_the_full_sequence():
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(16, 2, causal=True).eval()
    x = torch.randn(2, 6, 16)
    full = mha(x)
    cache = KVCache()
    steps = [mha(x[:, :3], cache=cache)] + [mha(x[:, t : t + 1], cache=cache) for t in range(3, 6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-6, rtol=1e-5)
    assert cache.k.shape == (2, 2, 6, 8)


def test_weights_rows_sum_to_one_and_are_causal():
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(16, 2, causal=True)
    w = mha.weights(torch.randn(1, 5, 16))
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2, 5))
    assert torch.equal(w[0, 0].triu(1), torch.zeros(5, 5))


def test_use_plain_attention_switches_every_layer():
    model = nn.Sequential(MultiHeadSelfAttention(8, 2), MultiHeadSelfAttention(8, 2))
    use_plain_attention(model)
    assert [m.fast for m in model] == [False, False]
    use_plain_attention(model, plain=False)
    assert [m.fast for m in model] == [True, True]


def test_only_the_fast_path_calls_scaled_dot_product_attention():
    """What exercise 3's forbid_torch_functions sees: a call however it is reached, and none on the plain path."""
    import torch.nn.functional as F

    from word2bert.testing import forbid_torch_functions

    layer, x = MultiHeadSelfAttention(8, 2, causal=True), torch.randn(2, 5, 8)
    with forbid_torch_functions(F.scaled_dot_product_attention, what="the plain path"):
        use_plain_attention(layer)(x)
    with pytest.raises(AssertionError, match="the fast path calls scaled_dot_product_attention"):
        with forbid_torch_functions(F.scaled_dot_product_attention, what="the fast path"):
            use_plain_attention(layer, plain=False)(x)


def test_feed_forward_is_positionwise_and_init_has_std_002():
    torch.manual_seed(0)
    ffn = FeedForward(64, 256)
    ffn.apply(init_weights)
    assert abs(ffn.w_1.weight.std().item() - 0.02) < 0.001
    assert torch.equal(ffn.w_1.bias, torch.zeros(256))
    x = torch.randn(2, 5, 64)
    torch.testing.assert_close(ffn(x)[:, 2], ffn(x[:, 2:3])[:, 0])
