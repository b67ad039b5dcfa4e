"""Whole-word tokenisation and vocabularies, as word2vec and ELMo use them."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-case words and single punctuation marks: ``"The mouse's tail."`` -> ``['the', "mouse's", 'tail', '.']``."""
    return _WORD.findall(text.lower())


class Vocab:
    """A word <-> id map with special tokens first, then words by falling frequency (ties alphabetical).

    Unknown words map to ``<unk>``. ``counts[i]`` is the training count of word ``i`` (0 for specials): word2vec's
    subsampling and noise distribution are computed from it.
    """

    PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
    SPECIALS = (PAD, UNK, BOS, EOS)

    def __init__(self, itos: list[str], counts: list[int]):
        if len(itos) != len(counts):
            raise ValueError("itos and counts must have the same length")
        if len(set(itos)) != len(itos):
            raise ValueError("vocabulary entries must be unique")
        self.itos = list(itos)
        self.counts = list(counts)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        missing = [s for s in self.SPECIALS if s not in self.stoi]
        if missing:
            raise ValueError(f"vocabulary lacks the special tokens {missing}")

    @classmethod
    def build(cls, sentences: Iterable[Iterable[str]], min_count: int = 1, max_size: int | None = None) -> Vocab:
        """Count words; keep those seen at least ``min_count`` times, at most ``max_size`` entries in all."""
        counter = Counter(w for s in sentences for w in s)
        words = sorted(
            (w for w, c in counter.items() if c >= min_count and w not in cls.SPECIALS), key=lambda w: (-counter[w], w)
        )
        if max_size is not None:
            words = words[: max(0, max_size - len(cls.SPECIALS))]
        return cls(list(cls.SPECIALS) + words, [0] * len(cls.SPECIALS) + [counter[w] for w in words])

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    @property
    def pad_id(self) -> int:
        return self.stoi[self.PAD]

    @property
    def unk_id(self) -> int:
        return self.stoi[self.UNK]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        unk = self.unk_id
        return [self.stoi.get(t, unk) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]

    def to_json(self) -> str:
        return json.dumps({"itos": self.itos, "counts": self.counts})

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        data = json.loads(text)
        return cls(data["itos"], data["counts"])

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))
