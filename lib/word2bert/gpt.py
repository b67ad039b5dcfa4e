"""GPT: a decoder-only transformer language model (Radford et al. 2018, 2019), in the manner of nanoGPT.

Token and learned position embeddings, a stack of layers (``layers``), each causal multi-head self-attention
(``attn``) and a GELU feed-forward network (``ffn``), a final LayerNorm, and an output layer that shares its
weights with the token embedding. What does not depend on the blocks (the logits, the loss, ``generate`` with a KV
cache, ``embed_sentence``) is ``DecoderLM``'s, which ``word2bert.llama``'s modern decoder shares; so are the
sampling rules, one function each: ``top_k_filter``, ``top_p_filter`` and ``sample_next_token`` (exercise 3 asks
students to write the last two).
GPT-2 puts LayerNorm before each sub-layer (pre-LN); ``GPTConfig(post_ln=True)`` gives GPT-1's block, with
LayerNorm after each residual sum and no final LayerNorm. ``from_hf`` loads Hugging Face GPT-2 weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from .bpe import ENDOFTEXT, BPETokenizer
from .checkpoint import load_checkpoint, load_converted, save_checkpoint
from .embedding import mean_pool_pieces
from .losses import linear_cross_entropy
from .transformer import FeedForward, KVCache, MultiHeadSelfAttention, init_weights, padding_mask

CHECKPOINT = Path(__file__).parent / "checkpoints" / "gpt.safetensors"


@dataclass
class GPTConfig:
    vocab_size: int = 2048
    block_size: int = 128  # the longest sequence (number of learned positions)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.1
    layer_norm_eps: float = 1e-5
    post_ln: bool = False  # True: GPT-1's post-LN block (and no final LayerNorm)


class Layer(nn.Module):
    """One transformer layer: GPT-2's pre-LN block, or GPT-1's post-LN block with ``post_ln``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        d = config.n_embd
        self.post_ln = config.post_ln
        self.ln_1 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.attn = MultiHeadSelfAttention(d, config.n_head, config.dropout, causal=True)
        self.ln_2 = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.ffn = FeedForward(d, 4 * d, config.dropout, approximate="tanh")

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: KVCache | None = None):
        if self.post_ln:  # GPT-1 (and the original Transformer): normalise the sum
            x = self.ln_1(x + self.attn(x, mask, cache))
            return self.ln_2(x + self.ffn(x))
        x = x + self.attn(self.ln_1(x), mask, cache)  # GPT-2: normalise the input, keep the residual path clean
        return x + self.ffn(self.ln_2(x))


class DecoderLM(nn.Module):
    """What every decoder-only language model of the course shares, whatever its blocks: the logits, the loss,
    generation with a KV cache and the word vectors of ``embed_sentence``. A model built on it has ``wte`` (the
    token embedding), ``layers``, ``lm_head``, ``tokenizer`` and ``hidden_states(input_ids, attention_mask,
    cache)``: GPT here, the modern decoder of ``word2bert.llama``."""

    def new_cache(self) -> list[KVCache]:
        """An empty KV cache, one per layer, for ``forward(..., cache=...)``."""
        return [KVCache() for _ in self.layers]

    def positions_and_mask(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, cache: list[KVCache] | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Each token's position [1 or B, T] and the padding mask for attention (None: no padding).

        attention_mask: [B, T_past + T] of 1 for tokens, 0 for padding (left or right), as in Hugging Face:
        padding keys are never attended to and positions count only real tokens, so a left-padded sequence
        gets the same vectors as the unpadded one. The T new tokens follow the cache's T_past.
        """
        T = input_ids.size(1)
        past = 0 if cache is None or cache[0].k is None else cache[0].k.size(-2)
        if past + T > self.config.block_size:
            raise ValueError(f"{past + T} positions, but the model has only block_size={self.config.block_size}")
        if attention_mask is None:
            return torch.arange(past, past + T, device=input_ids.device)[None], None
        positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -T:]
        return positions, None if attention_mask.all() else padding_mask(attention_mask)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: list[KVCache] | None = None,
    ) -> torch.Tensor:
        """Next-token logits [B, T, V]."""
        return self.lm_head(self.hidden_states(input_ids, attention_mask, cache)[-1])

    def loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean cross-entropy of predicting each token from the ones before it.

        With an ``attention_mask``, a target counts only where it and the position predicting it are both tokens:
        a padding position attends to no key, so what it outputs is up to the attention kernel (the CPU's and
        CUDA's differ), and the first token after left padding has no context to be predicted from.
        """
        # The last position predicts nothing: dropped before the output layer, not from its [B, T, V] logits.
        hidden = self.hidden_states(input_ids, attention_mask)[-1][:, :-1]
        targets = input_ids[:, 1:]
        if attention_mask is not None:
            targets = targets.masked_fill((attention_mask[:, :-1] == 0) | (attention_mask[:, 1:] == 0), -100)
        # F.cross_entropy(self.lm_head(hidden), targets), as one step (word2bert.losses): the same loss, faster
        return linear_cross_entropy(hidden.flatten(0, 1), self.lm_head.weight, targets.flatten())

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        max_new_tokens: int,
        attention_mask: torch.Tensor | None = None,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        greedy: bool = False,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
        stop_id: int | None = None,
    ) -> torch.Tensor:
        """Continue each prompt by ``max_new_tokens`` tokens; returns [B, T + max_new_tokens].

        Batches of prompts of different lengths are left-padded, with their ``attention_mask``. With the KV
        cache only the newest token is fed to the model at each step; the logits are the same. With ``stop_id``
        (an instruction-tuned model's end of turn) generation ends early once every row has written it.
        """
        self.eval()
        ids = input_ids
        if attention_mask is None:
            attention_mask = torch.ones_like(ids)
        cache = self.new_cache() if use_cache else None
        step_ids = ids
        done = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
        for _ in range(max_new_tokens):
            logits = self(step_ids, attention_mask, cache)[:, -1]
            next_id = sample_next(logits, temperature, top_k, top_p, greedy, generator)
            if stop_id is not None:  # a finished row goes on with stop_id, as Hugging Face pads it
                next_id = next_id.masked_fill(done, stop_id)
                done |= next_id == stop_id
            ids = torch.cat([ids, next_id[:, None]], dim=1)
            attention_mask = torch.cat([attention_mask, torch.ones_like(next_id[:, None])], dim=1)
            step_ids = next_id[:, None] if use_cache else ids
            if done.all():
                break
        return ids

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """One [n_layer + 1, len(sentence), n_embd] tensor per sentence: the embedding layer and each block, a
        word's BPE pieces averaged. Only the words to the left inform each vector: a decoder reads left to right
        (so the right-padding of a batch changes nothing)."""
        if self.tokenizer is None:
            raise ValueError(f"this {type(self).__name__} has no tokenizer: build it with a tokenizer")
        encoded = [self.tokenizer.encode_words(s) for s in sentences]
        T = max(len(ids) for ids, _ in encoded)
        ids = torch.tensor([p + [0] * (T - len(p)) for p, _ in encoded], device=self.wte.weight.device)
        mask = torch.tensor([[1] * len(p) + [0] * (T - len(p)) for p, _ in encoded], device=ids.device)
        self.eval()
        states = torch.stack(self.hidden_states(ids, mask))  # [n_layer + 1, B, T, D]
        return [
            mean_pool_pieces(states[:, b, : len(p)], word_ids, len(s))
            for b, ((p, word_ids), s) in enumerate(zip(encoded, sentences))
        ]

    def embed_sentence(self, tokens: list[str]) -> torch.Tensor:
        """The course's interface: [n_layer + 1, len(tokens), n_embd]."""
        return self.embed_batch([tokens])[0]


class GPT(DecoderLM):
    def __init__(self, config: GPTConfig, tokenizer: BPETokenizer | None = None):
        super().__init__()
        self.config, self.tokenizer = config, tokenizer
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.n_layer))
        self.ln_f = nn.Identity() if config.post_ln else nn.LayerNorm(config.n_embd, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying (Press & Wolf 2017)
        self.apply(init_weights)
        # GPT-2: each residual branch's output projection is scaled by 1/sqrt(2 n_layer), two branches per block,
        # so the residual stream's variance does not grow with depth.
        for name, p in self.named_parameters():
            if name.endswith(("attn.w_o.weight", "ffn.w_2.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def hidden_states(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        cache: list[KVCache] | None = None,
    ) -> list[torch.Tensor]:
        """The embedding output and each block's output, [B, T, D] each; the last after the final LayerNorm.
        attention_mask and cache: see ``positions_and_mask``."""
        positions, mask = self.positions_and_mask(input_ids, attention_mask, cache)
        x = self.drop(self.wte(input_ids) + self.wpe(positions))
        states = [x]
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, None if cache is None else cache[i])
            states.append(x)
        states[-1] = self.ln_f(x)
        return states


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Top-k (Fan et al. 2018): each row's logits [B, V] outside its k largest become -inf (ties with the k-th
    kept); ``k >= V`` cuts nothing."""
    if k >= logits.size(-1):
        return logits
    kth = torch.topk(logits, k).values[:, -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus sampling's cut (Holtzman et al. 2020): per row of logits [B, V], the fewest most likely tokens whose
    probability reaches ``p`` keep their logits, the others become -inf; ``p >= 1`` cuts nothing. Exercise 3
    writes this function."""
    if p >= 1:
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) - probs >= p  # the mass before this token already reaches p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def sample_next_token(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One token id per row of logits [B, V]: the most likely at temperature 0, else drawn from
    softmax(logits / temperature), among the ``top_k`` largest if given. Exercise 3 writes this function."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    probs = logits.float().softmax(dim=-1)
    if generator is not None:  # draw where the generator lives, so a seed gives the same tokens on any device
        probs = probs.to(generator.device)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1).to(logits.device)


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    greedy: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One token id per row of logits [B, V]: the most likely, or drawn after temperature, top-k and top-p."""
    if greedy:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return sample_next_token(logits, 1.0, None, generator)


@torch.no_grad()
def beam_search(model: DecoderLM, input_ids: torch.Tensor, max_new_tokens: int, num_beams: int = 4) -> torch.Tensor:
    """The continuation of one prompt [1, T] that a beam of ``num_beams`` hypotheses finds most likely.

    Each step extends every hypothesis by every token and keeps the ``num_beams`` best by summed log-probability.
    There is no end-of-text stop, so every hypothesis has the same length and no length penalty is needed; with
    ``num_beams=1`` this is greedy decoding. Returns [1, T + max_new_tokens].
    """
    if input_ids.size(0) != 1:
        raise ValueError(f"beam_search continues one prompt at a time, got a batch of {input_ids.size(0)}")
    model.eval()
    cache = model.new_cache()
    logits = model(input_ids, cache=cache)[:, -1]
    beams, scores = input_ids, torch.zeros(1, device=input_ids.device)
    for step in range(max_new_tokens):
        candidates = scores[:, None] + logits.float().log_softmax(dim=-1)  # [beams, V]: each hypothesis + each token
        scores, flat = candidates.flatten().topk(num_beams)
        origin, token = flat // logits.size(-1), flat % logits.size(-1)
        beams = torch.cat([beams[origin], token[:, None]], dim=1)
        if step + 1 < max_new_tokens:
            for layer in cache:  # the surviving hypotheses keep their parents' keys and values
                layer.k, layer.v = layer.k[origin], layer.v[origin]
            logits = model(token[:, None], cache=cache)[:, -1]
    return beams[:1]  # topk sorts: the first is the best


@torch.no_grad()
def continuation_nll(model: DecoderLM, ids: torch.Tensor, prompt_length: int) -> torch.Tensor:
    """Per sequence of ``ids`` [B, T], the mean negative log-likelihood of its tokens after the first
    ``prompt_length``, each given all the tokens before it: exp() of it is the continuation's perplexity."""
    model.eval()
    logprobs = model(ids[:, :-1]).float().log_softmax(dim=-1)
    token_logprobs = logprobs.gather(-1, ids[:, 1:, None]).squeeze(-1)
    return -token_logprobs[:, prompt_length - 1 :].mean(dim=-1)


# --- language-model data: documents as one token stream, cut into windows --------------------------------


def document_text(document: list[list[str]]) -> str:
    """A tokenised document as plain text: words joined by spaces."""
    return " ".join(" ".join(sentence) for sentence in document)


def token_stream(tokenizer: BPETokenizer, documents: list[list[list[str]]]) -> torch.Tensor:
    """All documents as one stream of token ids, each followed by ``<|endoftext|>``."""
    eot = tokenizer.token_to_id[ENDOFTEXT]
    ids: list[int] = []
    for document in documents:
        ids += tokenizer.encode(document_text(document))
        ids.append(eot)
    return torch.tensor(ids)


def windows(stream: torch.Tensor, block_size: int) -> torch.Tensor:
    """[N, block_size]: the stream cut into consecutive windows (the remainder dropped)."""
    n = len(stream) // block_size
    if n == 0:
        raise ValueError(f"{len(stream)} tokens make no window of block_size={block_size}")
    return stream[: n * block_size].view(n, block_size)


@torch.no_grad()
def next_token_loss(model: DecoderLM, data: torch.Tensor, batch_size: int, device: torch.device) -> float:
    """Mean next-token cross-entropy over the windows in ``data`` (every predicted token counts once)."""
    model.eval()
    total = 0.0
    for i in range(0, len(data), batch_size):
        batch = data[i : i + batch_size].to(device)
        total += model.loss(batch).item() * len(batch)
    return total / len(data)


def hf_sizes(c) -> dict[str, int]:
    """The sizes both decoders' configs share, read from a Hugging Face config by the names every ``PretrainedConfig``
    answers to (GPT-2's ``n_embd`` is also its ``hidden_size``): one home for how their names map to ours."""
    return {
        "vocab_size": c.vocab_size,
        "block_size": c.max_position_embeddings,
        "n_layer": c.num_hidden_layers,
        "n_head": c.num_attention_heads,
        "n_embd": c.hidden_size,
    }


def from_hf(model) -> GPT:
    """Our GPT with the weights of a Hugging Face ``GPT2LMHeadModel`` (GPT-2's Conv1D weights are transposed)."""
    c = model.config
    if c.activation_function not in ("gelu_new", "gelu_pytorch_tanh"):
        raise ValueError(f"GPT-2 uses the tanh GELU; this model uses {c.activation_function!r}")
    config = GPTConfig(**hf_sizes(c), dropout=c.resid_pdrop, layer_norm_eps=c.layer_norm_epsilon)
    ours = GPT(config)
    renames = {
        "attn.c_attn": "attn.w_qkv",
        "attn.c_proj": "attn.w_o",
        "mlp.c_fc": "ffn.w_1",
        "mlp.c_proj": "ffn.w_2",
    }
    state = {}
    for name, tensor in model.transformer.state_dict().items():
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            continue  # old checkpoints store the causal mask as a buffer
        if name.startswith("h."):
            name = "layers." + name.removeprefix("h.")  # Hugging Face's h.N is our layers.N
        for hf, our in renames.items():
            if f".{hf}." in name:
                name = name.replace(hf, our)
                if name.endswith(".weight"):
                    tensor = tensor.t()  # Conv1D stores [in, out]; nn.Linear [out, in]
                break
        state[name] = tensor
    state["lm_head.weight"] = state["wte.weight"]
    return load_converted(ours, state, "the Hugging Face GPT2LMHeadModel").to(model.device)


def save(model: GPT, path: str | Path, dtype: torch.dtype | None = None) -> Path:
    """A safetensors checkpoint holding the weights (in ``dtype``, if given), the config and the tokenizer."""
    extra = {"tokenizer": model.tokenizer.to_dict()} if model.tokenizer is not None else {}
    return save_checkpoint(path, model, model.config, extra, dtype)


def load(path: str | Path, device: str | torch.device | None = None) -> GPT:
    with safe_open(str(path), framework="pt") as f:
        if any(key.startswith("h.") for key in f.keys()):
            raise ValueError(
                f"{path} predates the renaming of GPT's blocks (h.N.mlp is now layers.N.ffn): "
                "rename its keys, or train it again"
            )

    def build(config: dict, extra: dict) -> GPT:
        tokenizer = BPETokenizer.from_dict(extra["tokenizer"]) if "tokenizer" in extra else None
        return GPT(GPTConfig(**config), tokenizer)

    return load_checkpoint(path, build, device)


def pretrained(device: str | torch.device | None = None) -> GPT:
    """The course's small GPT, trained by ``python -m word2bert.scripts.train_gpt`` (see checkpoints/gpt.md)."""
    return load(CHECKPOINT, device)
