"""Trained word vectors apart from the models that train them, as gensim keeps them: ``KeyedVectors`` answers
neighbour, similarity and analogy questions about any table of vectors, and ``TrainedVectors`` is what word2vec
and GloVe share (a vocabulary, a module, a config, a loss history, ``wv`` and safetensors save/load).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checkpoint import load_checkpoint, save_checkpoint
from .data import Vocab
from .device import resolve


class KeyedVectors:
    """Word vectors with gensim's questions: ``wv[word]``, ``most_similar``, ``similarity``. Shared with GloVe."""

    def __init__(self, words: Sequence[str], vectors: torch.Tensor):
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words for {len(vectors)} vectors")
        self.index_to_key = list(words)
        self.key_to_index = {w: i for i, w in enumerate(self.index_to_key)}
        self.vectors = vectors.detach()
        self.unit = F.normalize(self.vectors.float(), dim=-1)

    @property
    def vector_size(self) -> int:
        return self.vectors.shape[1]

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __contains__(self, word: str) -> bool:
        return word in self.key_to_index

    def _index(self, word: str) -> int:
        try:
            return self.key_to_index[word]
        except KeyError:
            raise KeyError(f"word {word!r} not in vocabulary") from None

    def __getitem__(self, word: str) -> torch.Tensor:
        return self.vectors[self._index(word)]

    def similarity(self, a: str, b: str) -> float:
        """Cosine of the two words' vectors."""
        return float(self.unit[self._index(a)] @ self.unit[self._index(b)])

    def most_similar(
        self, positive: str | Sequence[str] | None = None, negative: Sequence[str] = (), topn: int = 10
    ) -> list[tuple[str, float]]:
        """The ``topn`` words nearest by cosine to the mean of the positive words' unit vectors minus the negative
        ones' (3CosAdd for ``positive=[b, c], negative=[a]``), leaving out the query words."""
        positive = [positive] if isinstance(positive, str) else list(positive or [])
        negative = list(negative)
        if not positive and not negative:
            raise ValueError("most_similar needs at least one word")
        query = [self._index(w) for w in positive + negative]
        signs = torch.tensor([1.0] * len(positive) + [-1.0] * len(negative), device=self.unit.device)
        target = F.normalize((signs[:, None] * self.unit[query]).mean(0), dim=0)
        sims = self.unit @ target
        sims[query] = -float("inf")
        best = torch.topk(sims, min(topn, len(self) - len(set(query))))
        return [(self.index_to_key[i], float(s)) for s, i in zip(best.values.tolist(), best.indices.tolist())]

    def embed_sentence(self, tokens: Sequence[str]) -> torch.Tensor:
        """The course's common interface: [1, len(tokens), dim], one static vector per word (zeros if unknown)."""
        out = self.vectors.new_zeros(1, len(tokens), self.vector_size)
        known = [(k, self.key_to_index[w]) for k, w in enumerate(tokens) if w in self.key_to_index]
        if known:
            where, rows = zip(*known)
            out[0, list(where)] = self.vectors[list(rows)]
        return out


class TrainedVectors:
    """What Word2Vec and GloVe share: a vocabulary, a torch module, a config dataclass and a loss history, with
    ``wv``, ``embed_sentence`` and safetensors save/load. Subclasses name their config and build their module."""

    config_class: type
    vocab: Vocab
    model: nn.Module
    loss_history: list[float]

    @staticmethod
    def build_model(config, vocab_size: int) -> nn.Module:
        raise NotImplementedError

    def word_vectors(self) -> torch.Tensor:
        """[len(vocab), dim]: the vectors ``wv`` shows, special tokens included."""
        raise NotImplementedError

    @property
    def wv(self) -> KeyedVectors:
        first = len(Vocab.SPECIALS)  # the special tokens never occur in training text
        return KeyedVectors(self.vocab.itos[first:], self.word_vectors().detach()[first:])

    def embed_sentence(self, tokens: Sequence[str]) -> torch.Tensor:
        """[1, len(tokens), dim]: the static vectors (zeros for unknown words)."""
        return self.wv.embed_sentence(tokens)

    def save(self, path: str | Path) -> Path:
        extra = {"vocab": self.vocab.to_json(), "loss_history": self.loss_history}
        return save_checkpoint(path, self.model, self.config, extra)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device | None = None):
        self = cls.__new__(cls)

        def build(config: dict, extra: dict) -> nn.Module:
            self.config = cls.config_class(**config)
            self.vocab = Vocab.from_json(extra["vocab"])
            self.loss_history = list(extra["loss_history"])
            return cls.build_model(self.config, len(self.vocab))

        self.model = load_checkpoint(path, build, device)
        self.device = resolve(device)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in asdict(self.config).items())})"
