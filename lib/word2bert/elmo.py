"""ELMo: a bidirectional LSTM language model whose layers give contextual word vectors (Peters et al. 2018).

As in the paper and AllenNLP's reference implementation, scaled down:

* a character encoder builds a vector for every word from its UTF-8 bytes (with begin- and end-of-word
  markers): character embeddings, convolutions of several widths max-pooled over time, highway layers, and a
  linear projection to the LSTM size. One encoder serves both directions;
* a forward and a backward LSTM language model, ``n_layers`` each with their own weights, LSTM cells with a
  projection (``cell_dim`` memory, ``dim`` output), a residual connection from each layer's input to its output
  above the first layer, and dropout;
* one softmax over a word vocabulary, shared by the two directions: the forward LM predicts the next word, the
  backward LM the previous word, and the loss is the mean of the two cross-entropies.

A word's representations are layer 0, the character encoder's vector duplicated to ``2 * dim``, and for each
LSTM layer ``[forward; backward]``. ``ScalarMix`` is the paper's task-specific weighted sum of those layers.
Differences from the reference: a full softmax instead of a sampled one, sentence-level training instead of
stateful windows, no cell clipping, padding characters embedded as zeros.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .checkpoint import load_checkpoint, save_checkpoint
from .data import Vocab
from .device import resolve
from .training import TrainConfig
from .training import train as train_loop

CHECKPOINT = Path(__file__).parent / "checkpoints" / "elmo.safetensors"

# Character ids, as AllenNLP's ELMoCharacterMapper: 256 UTF-8 bytes, then markers; every id is shifted by one
# so that 0 pads words (shorter than max_characters) and sentences (shorter than the batch).
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR = 256, 257, 258, 259
NUM_CHARS = 261


@dataclass
class ElmoConfig:
    """Defaults are the paper's model; ``train_elmo`` uses a tiny one."""

    vocab_size: int = 793471  # output words (the 1B Word Benchmark's vocabulary)
    max_characters: int = 50  # per word, markers included
    char_dim: int = 16
    # (width, number of filters)
    filters: list[tuple[int, int]] = field(
        default_factory=lambda: [(1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)]
    )
    n_highway: int = 2
    dim: int = 512  # token vectors and LSTM outputs (the projection)
    cell_dim: int = 4096  # LSTM memory cells; equal to dim: a plain LSTM without projection
    n_layers: int = 2
    dropout: float = 0.1

    def __post_init__(self):
        self.filters = [tuple(f) for f in self.filters]  # JSON stores tuples as lists
        if max(w for w, _ in self.filters) > self.max_characters:
            raise ValueError("max_characters must be at least the widest filter")
        if self.cell_dim < self.dim:
            raise ValueError("cell_dim must be at least dim (the LSTM projects its cells down to dim)")


# --- data: words to character ids, sentences to padded batches --------------------------------------------------


def word_char_ids(word: str, max_characters: int) -> list[int]:
    """``[BOW] bytes [EOW]`` (bytes cut to fit), each id + 1, padded with 0; <s> and </s> get marker ids."""
    if word == Vocab.BOS:
        chars = [BOS_CHAR]
    elif word == Vocab.EOS:
        chars = [EOS_CHAR]
    else:
        chars = list(word.encode("utf-8"))[: max_characters - 2]
    ids = [c + 1 for c in [BOW_CHAR, *chars, EOW_CHAR]]
    return ids + [0] * (max_characters - len(ids))


def make_batch(sentences: Sequence[Sequence[str]], vocab: Vocab | None, max_characters: int) -> dict:
    """Sentences wrapped in <s> ... </s> and padded: ``chars`` [B, T, C], ``mask`` [B, T] (True on real
    tokens), and with a vocabulary ``words`` [B, T], the ids the softmax predicts (padding: -100)."""
    wrapped = [[Vocab.BOS, *s, Vocab.EOS] for s in sentences]
    T = max(map(len, wrapped))
    chars = torch.zeros(len(wrapped), T, max_characters, dtype=torch.long)
    mask = torch.zeros(len(wrapped), T, dtype=torch.bool)
    words = torch.full((len(wrapped), T), -100, dtype=torch.long)
    for b, s in enumerate(wrapped):
        chars[b, : len(s)] = torch.tensor([word_char_ids(w, max_characters) for w in s])
        mask[b, : len(s)] = True
        if vocab is not None:
            words[b, : len(s)] = torch.tensor(vocab.encode(s))
    batch = {"chars": chars, "mask": mask}
    if vocab is not None:
        batch["words"] = words
    return batch


class SentenceBatches:
    """Re-iterable batches of sentences of similar length (less padding), reshuffled on every pass."""

    def __init__(
        self,
        sentences: Sequence[Sequence[str]],
        vocab: Vocab,
        batch_size: int,
        max_characters: int,
        max_len: int = 48,
        seed: int = 0,
    ):
        self.sentences = [list(s[:max_len]) for s in sentences if s]
        self.vocab, self.batch_size, self.max_characters = vocab, batch_size, max_characters
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return (len(self.sentences) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.sentences), generator=self.generator).tolist()
        pool = 50 * self.batch_size  # sort by length within pools of 50 batches
        batches = []
        for i in range(0, len(order), pool):
            chunk = sorted(order[i : i + pool], key=lambda j: len(self.sentences[j]))
            batches += [chunk[k : k + self.batch_size] for k in range(0, len(chunk), self.batch_size)]
        for j in torch.randperm(len(batches), generator=self.generator).tolist():
            yield make_batch([self.sentences[k] for k in batches[j]], self.vocab, self.max_characters)


def reverse_padded(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of ``x`` [B, T, ...] within its length, leaving padding at the end."""
    lengths = mask.sum(1, keepdim=True)
    positions = torch.arange(x.shape[1], device=x.device)[None]
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


# --- the model -----------------------------------------------------------------------------------------------


class Highway(nn.Module):
    """y = g * relu(W_t x) + (1 - g) * x, g = sigmoid(W_g x) (Srivastava et al. 2015): each dimension chooses
    between a transformation and its input. The gate starts biased towards carrying the input, as in AllenNLP."""

    def __init__(self, dim: int):
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)
        nn.init.constant_(self.gate.bias, -1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.gate(x))
        return g * F.relu(self.transform(x)) + (1 - g) * x


class CharacterEncoder(nn.Module):
    """A word's characters -> one vector: embed, convolve (several widths), max-pool over time, highway, project."""

    def __init__(self, config: ElmoConfig):
        super().__init__()
        self.char_embedding = nn.Embedding(NUM_CHARS + 1, config.char_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(nn.Conv1d(config.char_dim, n, width) for width, n in config.filters)
        n_filters = sum(n for _, n in config.filters)
        self.highways = nn.ModuleList(Highway(n_filters) for _ in range(config.n_highway))
        self.projection = nn.Linear(n_filters, config.dim)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """chars: [B, T, C] character ids -> [B, T, dim]."""
        B, T, C = chars.shape
        x = self.char_embedding(chars.view(B * T, C)).transpose(1, 2)  # [B*T, char_dim, C]
        # each filter detects a character n-gram; its strongest response anywhere in the word is kept
        x = torch.cat([F.relu(conv(x).max(dim=-1).values) for conv in self.convolutions], dim=-1)
        for highway in self.highways:
            x = highway(x)
        return self.projection(x).view(B, T, -1)


class LanguageModel(nn.Module):
    """One direction: a stack of LSTMs with projections; from the second layer on, input + output (residual)."""

    def __init__(self, config: ElmoConfig):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.LSTM(
                config.dim,
                config.cell_dim,
                batch_first=True,
                proj_size=config.dim if config.cell_dim > config.dim else 0,
            )
            for _ in range(config.n_layers)
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x: [B, T, dim] in reading order -> the output of every layer, [B, T, dim] each."""
        outputs = []
        for i, lstm in enumerate(self.layers):
            with warnings.catch_warnings():  # PyTorch warns on every call that its oneDNN kernels lack LSTM
                warnings.filterwarnings("ignore", message="LSTM with projections")  # projections; the default is right
                h, _ = lstm(self.dropout(x))
            x = h if i == 0 else x + h
            outputs.append(x)
        return outputs


class BiLM(nn.Module):
    """ELMo's bidirectional language model: a shared character encoder and softmax, two directional LSTM LMs."""

    def __init__(self, config: ElmoConfig, vocab: Vocab | None = None):
        super().__init__()
        if vocab is not None and len(vocab) != config.vocab_size:
            raise ValueError(f"vocab has {len(vocab)} words, config.vocab_size is {config.vocab_size}")
        self.config, self.vocab = config, vocab
        self.char_encoder = CharacterEncoder(config)
        self.forward_lm = LanguageModel(config)
        self.backward_lm = LanguageModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.softmax = nn.Linear(config.dim, config.vocab_size)

    @property
    def device(self) -> torch.device:
        return self.softmax.weight.device

    def states(self, chars: torch.Tensor, mask: torch.Tensor):
        """Token vectors [B, T, dim] and each direction's layer outputs (lists of [B, T, dim]), in reading order.

        The backward LM reads each sentence reversed within its length, so padding never reaches real tokens.
        """
        tokens = self.char_encoder(chars) * mask[..., None]
        forward = self.forward_lm(tokens)
        backward = [reverse_padded(h, mask) for h in self.backward_lm(reverse_padded(tokens, mask))]
        return tokens, forward, backward

    def forward(self, chars: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """ELMo's representations [n_layers + 1, B, T, 2 * dim]: [token; token], then [forward; backward]."""
        tokens, forward, backward = self.states(chars, mask)
        layers = [torch.cat([tokens, tokens], -1)] + [torch.cat(fb, -1) for fb in zip(forward, backward)]
        return torch.stack(layers) * mask[None, ..., None]

    def cross_entropies(
        self, chars: torch.Tensor, mask: torch.Tensor, words: torch.Tensor, reduction: str = "mean"
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward LM: the state at t predicts word t + 1; backward LM: the state at t predicts word t - 1."""
        _, forward, backward = self.states(chars, mask)
        # padding targets are -100 (ignored); each sentence has as many targets in both directions
        pairs = (
            (forward[-1][:, :-1], words[:, 1:]),
            (backward[-1][:, 1:], words[:, :-1].masked_fill(~mask[:, 1:], -100)),
        )  # padding predicts nothing
        fwd, bwd = (
            F.cross_entropy(self.softmax(self.dropout(h)).flatten(0, 1), target.flatten(), reduction=reduction)
            for h, target in pairs
        )
        return fwd, bwd

    def loss(self, chars: torch.Tensor, mask: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        """The mean of the two directions' cross-entropies."""
        fwd, bwd = self.cross_entropies(chars, mask, words)
        return (fwd + bwd) / 2

    @torch.no_grad()
    def embed_batch(self, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """One [n_layers + 1, len(sentence), 2 * dim] tensor per sentence (the <s> and </s> positions dropped)."""
        self.eval()
        batch = make_batch(sentences, None, self.config.max_characters)
        layers = self(batch["chars"].to(self.device), batch["mask"].to(self.device))
        return [layers[:, b, 1 : len(s) + 1] for b, s in enumerate(sentences)]

    def embed_sentence(self, tokens: list[str]) -> torch.Tensor:
        """The course's interface: [3, len(tokens), 2 * dim] for the token layer, LSTM 1 and LSTM 2."""
        return self.embed_batch([tokens])[0]


class ScalarMix(nn.Module):
    """gamma * sum_j softmax(w)_j * h_j: a task's own weighting of ELMo's layers (the paper's equation 1).

    Train it with the downstream model while the biLM stays frozen (its layers computed under no_grad).
    """

    def __init__(self, num_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
        """layers: [L, ...] (or L tensors of one shape) -> [...]."""
        s = torch.softmax(self.weights, dim=0)
        return self.gamma * sum(w * h for w, h in zip(s, layers))


# --- training, evaluation, checkpoints ---------------------------------------------------------------------------


def train(
    model: BiLM,
    sentences: Sequence[Sequence[str]],
    config: TrainConfig,
    batch_size: int = 32,
    max_len: int = 48,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> list[float]:
    """Train the biLM on tokenised sentences (cut to ``max_len``) with the course's loop (AdamW, warm-up, clipping,
    tqdm); returns the loss of every step."""
    torch.manual_seed(seed)
    batches = SentenceBatches(sentences, model.vocab, batch_size, model.config.max_characters, max_len, seed)
    return train_loop(model, batches, lambda m, b: m.loss(**b), config, device=device, desc="ELMo biLM")


@torch.no_grad()
def perplexity(model: BiLM, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> dict[str, float]:
    """Per-word perplexity of each direction and of their mean cross-entropy, on held-out sentences."""
    model.eval()
    totals, count = torch.zeros(2), 0
    for batch in SentenceBatches(sentences, model.vocab, batch_size, model.config.max_characters):
        batch = {k: v.to(model.device) for k, v in batch.items()}
        totals += torch.stack(model.cross_entropies(**batch, reduction="sum")).cpu()
        count += int((batch["words"][:, 1:] != -100).sum())
    fwd, bwd = (totals / count).tolist()
    return {"forward": math.exp(fwd), "backward": math.exp(bwd), "mean": math.exp((fwd + bwd) / 2)}


def save(model: BiLM, path: str | Path, extra: dict | None = None, dtype: torch.dtype | None = None) -> Path:
    """A safetensors checkpoint with the weights (in ``dtype``, if given), the config, the word vocabulary (and
    anything in ``extra``). Characters need no vocabulary: they are UTF-8 bytes."""
    return save_checkpoint(path, model, model.config, {**(extra or {}), "vocab": model.vocab.to_json()}, dtype)


def load(path: str | Path, device: str | torch.device | None = None) -> BiLM:
    def build(config: dict, extra: dict) -> BiLM:
        return BiLM(ElmoConfig(**config), Vocab.from_json(extra["vocab"]))

    return load_checkpoint(path, build, resolve(device))


def pretrained(device: str | torch.device | None = None) -> BiLM:
    """The course's small ELMo, trained by ``python -m word2bert.scripts.train_elmo`` (see checkpoints/elmo.md)."""
    return load(CHECKPOINT, device)
