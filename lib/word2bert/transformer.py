"""The pieces GPT and BERT share, written once: attention, multi-head self-attention, the feed-forward
network and the initialisation (Vaswani et al. 2017, "Attention Is All You Need").

``attention`` is softmax(Q K^T / sqrt(d_k)) V, by default the plain teaching path, the formula of the paper line by
line. ``MultiHeadSelfAttention`` (and Llama's grouped-query attention) call it with ``fast``, through
``torch.nn.functional.scaled_dot_product_attention`` for speed; set a layer's ``fast`` attribute to False (or call
``use_plain_attention(model)``) to run the plain path instead: the tests prove both agree.

Masks are boolean and broadcast to [..., T_query, T_key]: True means "may attend".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def causal_mask(t_query: int, t_key: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[t_query, t_key] boolean mask letting query i see keys up to its own position.

    The queries are the last ``t_query`` of the ``t_key`` positions (with a KV cache, earlier keys are cached),
    so query i sits at position ``t_key - t_query + i``.
    """
    return torch.ones(t_query, t_key, dtype=torch.bool, device=device).tril(diagonal=t_key - t_query)


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None, causal: bool = False
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)): how much each query attends to each key. q: [..., Tq, d], k: [..., Tk, d]."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        c = causal_mask(q.size(-2), k.size(-2), device=q.device)
        mask = c if mask is None else mask & c
    if mask is not None:
        # The most negative finite number rather than -inf: a row with every key masked (a padding query)
        # then gets uniform weights instead of NaN, which would leak into every other row through V.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    dropout_p: float = 0.0,
    fast: bool = False,
) -> torch.Tensor:
    """Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V: q [..., Tq, d], k and v [..., Tk, d] (Tk counts
    cached positions, the queries being the last Tq of them). Returns [..., Tq, d_v]. ``fast``: the same through
    ``F.scaled_dot_product_attention``, as the models call it."""
    if not fast:
        weights = attention_weights(q, k, mask, causal)
        return F.dropout(weights, p=dropout_p, training=dropout_p > 0) @ v
    T = q.size(-2)
    if mask is None and (not causal or k.size(-2) == T):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=causal)
    if causal:
        c = causal_mask(T, k.size(-2), device=q.device)
        mask = c if mask is None else mask & c
    # An additive mask with the most negative finite number, as in `attention_weights` (no NaN rows).
    bias = torch.zeros(mask.shape, dtype=q.dtype, device=q.device)
    bias = bias.masked_fill(~mask, torch.finfo(q.dtype).min)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)


@dataclass
class KVCache:
    """Keys and values one attention layer has already computed, so generation feeds only the new token."""

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions (dim -2) and return all keys and values so far."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v


class MultiHeadSelfAttention(nn.Module):
    """MultiHead(X) = Concat(head_1, ..., head_h) W^O with head_i = Attention(X W^Q_i, X W^K_i, X W^V_i)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, causal: bool = False):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads, self.causal, self.dropout = n_heads, causal, dropout
        self.fast = True  # scaled_dot_product_attention; False runs the plain path of `attention` above
        self.w_qkv = nn.Linear(d_model, 3 * d_model)  # W^Q, W^K, W^V of every head, stacked: one matmul
        self.w_o = nn.Linear(d_model, d_model)
        self.resid_dropout = nn.Dropout(dropout)

    def _heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        B, T, D = x.shape
        q, k, v = self.w_qkv(x).split(D, dim=-1)
        return tuple(t.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2) for t in (q, k, v))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: KVCache | None = None) -> torch.Tensor:
        """x: [B, T, D]; mask: boolean, broadcastable to [B, heads, T, T_key] (T_key counts cached positions)."""
        B, T, D = x.shape
        q, k, v = self._heads(x)
        if cache is not None:
            k, v = cache.extend(k, v)
        p = self.dropout if self.training else 0.0
        y = attention(q, k, v, mask, self.causal, p, self.fast)
        y = y.transpose(1, 2).reshape(B, T, D)
        return self.resid_dropout(self.w_o(y))

    @torch.no_grad()
    def weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The attention weights [B, heads, T, T] this layer gives input x (for attention-pattern figures)."""
        q, k, _ = self._heads(x)
        return attention_weights(q, k, mask, self.causal)


class FeedForward(nn.Module):
    """FFN(x) = GELU(x W_1 + b_1) W_2 + b_2, applied to each position alone (GELU as in GPT and BERT)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, approximate: str = "none"):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.approximate = approximate  # "tanh" is GPT-2's GELU, "none" BERT's exact erf GELU
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.w_2(F.gelu(self.w_1(x), approximate=self.approximate)))


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, T] of 1 (token) / 0 (padding) -> boolean [B, 1, 1, T]: no query ever attends to a padding key."""
    return attention_mask.bool()[:, None, None, :]


def use_plain_attention(model: nn.Module, plain: bool = True) -> nn.Module:
    """Switch every attention layer of ``model`` (each module with a ``fast`` switch: ``MultiHeadSelfAttention``,
    Llama's grouped-query attention) to the plain teaching path, or back to the fast one."""
    for m in model.modules():
        if isinstance(getattr(m, "fast", None), bool):
            m.fast = not plain
    return model


def init_weights(module: nn.Module, std: float = 0.02) -> None:
    """GPT's and BERT's initialisation: weights ~ N(0, std), biases 0, LayerNorm the identity. Use with .apply."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
