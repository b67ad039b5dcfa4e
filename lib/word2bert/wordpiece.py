"""WordPiece, BERT's tokenizer (Wu et al. 2016; Devlin et al. 2019).

Two steps. Basic tokenisation cleans the text, lower-cases it, strips accents and cuts it into words and
single punctuation marks. Then each word is split greedily into the longest vocabulary pieces from the left;
pieces inside a word carry the prefix "##" ("playing" -> "play", "##ing"). A word that cannot be split, or is
longer than ``max_input_chars_per_word`` characters, becomes [UNK]. The original WordPiece (Schuster & Nakajima
2012) learns its vocabulary by choosing the merge that most raises the likelihood of the training text under a
language model; its trainer was never released. This one learns it as Hugging Face ``tokenizers`` does: merges of
the most frequent adjacent pieces (``word2bert.bpe.learn_merges``) on "##"-prefixed characters, which is simpler
and testable against a public implementation. Either way the vocabulary is the set of pieces, and encoding is
greedy longest-match, not merges.

A sentence pair goes in as ``[CLS] A [SEP] B [SEP]`` with segment ids 0 then 1 (``build_pair_input``, after
``truncate_seq_pair`` when it is too long): BERT's pre-training pairs and the fine-tuning pair tasks share it.
"""

from __future__ import annotations

import random
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .bpe import learn_merges

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = [PAD, UNK, CLS, SEP, MASK]
PREFIX = "##"


def _is_punctuation(ch: str) -> bool:
    # BERT counts every non-alphanumeric printable ASCII character ("$", "^", "`") as punctuation too.
    return (ch.isascii() and ch.isprintable() and not ch.isalnum() and ch != " ") or unicodedata.category(
        ch
    ).startswith("P")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(
        lo <= cp <= hi
        for lo, hi in (
            (0x4E00, 0x9FFF),
            (0x3400, 0x4DBF),
            (0x20000, 0x2A6DF),
            (0x2A700, 0x2B73F),
            (0x2B740, 0x2B81F),
            (0x2B820, 0x2CEAF),
            (0xF900, 0xFAFF),
            (0x2F800, 0x2FA1F),
        )
    )


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """BERT's BasicTokenizer: drop control characters, put spaces around CJK characters, lower-case and
    strip accents (when ``lowercase``), split on whitespace and around every punctuation mark."""
    chars = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "\t\n\r" or cat == "Zs":
            chars.append(" ")
        elif ord(ch) == 0 or ord(ch) == 0xFFFD or cat.startswith("C"):
            continue
        elif _is_cjk(ch):
            chars.append(f" {ch} ")
        else:
            chars.append(ch)
    text = "".join(chars)
    if lowercase:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn").lower()
    words = []
    for word in text.split():
        start = 0
        for i, ch in enumerate(word):
            if _is_punctuation(ch):
                words += [word[start:i], ch] if i > start else [ch]
                start = i + 1
        if start < len(word):
            words.append(word[start:])
    return words


@dataclass
class Encoding:
    """One encoded sentence or sentence pair: [CLS] A [SEP] (B [SEP])."""

    input_ids: list[int]
    token_type_ids: list[int]  # the segment: 0 for [CLS] A [SEP], 1 for B [SEP]
    special_tokens_mask: list[int]  # 1 for [CLS] and [SEP]
    word_ids: list[int | None] = field(default_factory=list)  # the word of each piece; None for specials


class WordPieceTokenizer:
    def __init__(self, vocab: Sequence[str], lowercase: bool = True, max_input_chars_per_word: int = 100):
        self.vocab = list(vocab)
        self.token_to_id = {t: i for i, t in enumerate(self.vocab)}
        missing = [t for t in SPECIAL_TOKENS if t not in self.token_to_id]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        self.lowercase, self.max_input_chars_per_word = lowercase, max_input_chars_per_word
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (self.token_to_id[t] for t in SPECIAL_TOKENS)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        min_frequency: int = 2,
        lowercase: bool = True,
        progress: bool = True,
    ) -> WordPieceTokenizer:
        """Learn a vocabulary of ``vocab_size`` pieces (special tokens and every character included) on ``texts``."""
        words = Counter(w for text in texts for w in basic_tokenize(text, lowercase))
        symbols = {(w[0], *(PREFIX + c for c in w[1:])): n for w, n in words.items()}
        tokens = SPECIAL_TOKENS + sorted({s for word in symbols for s in word})
        learn_merges(
            symbols,
            tokens,
            vocab_size,
            min_frequency,
            join=lambda a, b: a + b[len(PREFIX) :],
            progress=progress,
        )
        return cls(tokens, lowercase)

    def wordpiece(self, word: str) -> list[str]:
        """Greedy longest-match-first pieces of one word, or [UNK]."""
        if len(word) > self.max_input_chars_per_word:
            return [UNK]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else PREFIX + word[start:end]
                if piece in self.token_to_id:
                    break
                end -= 1
            if end == start:
                return [UNK]  # some part of the word matches no piece: the whole word is unknown
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        return [p for w in basic_tokenize(text, self.lowercase) for p in self.wordpiece(w)]

    def _pieces(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        ids, word_ids = [], []
        for n, word in enumerate(words):
            for w in basic_tokenize(word, self.lowercase):
                piece_ids = [self.token_to_id[p] for p in self.wordpiece(w)]
                ids += piece_ids
                word_ids += [n] * len(piece_ids)
        return ids, word_ids

    def encode(self, text: str, pair: str | None = None, max_length: int | None = None) -> Encoding:
        """[CLS] text [SEP] (pair [SEP]); with ``max_length``, the longer sentence is cut first."""
        a = self._pieces(basic_tokenize(text, self.lowercase))
        b = self._pieces(basic_tokenize(pair, self.lowercase)) if pair is not None else None
        return self._assemble(a, b, max_length)

    def encode_words(self, words: Sequence[str], max_length: int | None = None) -> Encoding:
        """Encode words already split (e.g. ``embed_sentence``'s): ``word_ids`` refer to their positions."""
        return self._assemble(self._pieces(words), None, max_length)

    def _assemble(self, a, b, max_length: int | None) -> Encoding:
        (a_ids, a_words), (b_ids, b_words) = a, b or ([], [])
        if max_length is not None:
            budget = max_length - (3 if b is not None else 2)
            while len(a_ids) + len(b_ids) > budget:  # BERT's truncate_seq_pair: trim the longer one
                if len(a_ids) > len(b_ids):
                    a_ids, a_words = a_ids[:-1], a_words[:-1]
                else:
                    b_ids, b_words = b_ids[:-1], b_words[:-1]
        ids = [self.cls_id, *a_ids, self.sep_id]
        word_ids = [None, *a_words, None]
        types = [0] * len(ids)
        if b is not None:
            ids += [*b_ids, self.sep_id]
            word_ids += [*b_words, None]
            types += [1] * (len(b_ids) + 1)
        special = [int(w is None) for w in word_ids]
        return Encoding(ids, types, special, word_ids)

    def batch(self, encodings: Sequence[Encoding]) -> dict[str, torch.Tensor]:
        """Right-pad encodings into tensors input_ids, token_type_ids, attention_mask (each [B, T])."""
        T = max(len(e.input_ids) for e in encodings)
        out = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
        for e in encodings:
            pad = T - len(e.input_ids)
            out["input_ids"].append(e.input_ids + [self.pad_id] * pad)
            out["token_type_ids"].append(e.token_type_ids + [0] * pad)
            out["attention_mask"].append([1] * len(e.input_ids) + [0] * pad)
        return {k: torch.tensor(v) for k, v in out.items()}

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        tokens = [self.vocab[int(i)] for i in ids]
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in SPECIAL_TOKENS]
        return " ".join(tokens).replace(" " + PREFIX, "")

    def save(self, path: str | Path) -> Path:
        """BERT's vocab.txt: one piece per line, in id order (Hugging Face's tokenizers read it too)."""
        path = Path(path)
        path.write_text("".join(t + "\n" for t in self.vocab), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path, lowercase: bool = True) -> WordPieceTokenizer:
        return cls(Path(path).read_text(encoding="utf-8").splitlines(), lowercase)


# --- sentence pairs: [CLS] A [SEP] B [SEP] from piece ids (pre-training's pairs, fine-tuning's pair tasks) ---------


def truncate_seq_pair(
    tokens_a: Sequence, tokens_b: Sequence, max_num_tokens: int, rng: random.Random | None = None
) -> tuple[list, list]:
    """Copies of A and B cut to ``max_num_tokens`` together: one piece at a time from the longer (B on a tie),
    from its front or its back at random with ``rng`` (the reference implementation), from the back without."""
    a, b = list(tokens_a), list(tokens_b)
    while len(a) + len(b) > max_num_tokens:
        longer = a if len(a) > len(b) else b
        if rng is not None and rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return a, b


def build_pair_input(
    tokens_a: Sequence[int], tokens_b: Sequence[int], *, cls_id: int, sep_id: int, max_len: int | None = None
) -> tuple[list[int], list[int]]:
    """``(input_ids, token_type_ids)`` of ``[CLS] A [SEP] B [SEP]``: segment 0 up to the first [SEP], then 1.
    With ``max_len`` the pair is first cut by ``truncate_seq_pair`` to fit."""
    if max_len is not None:
        tokens_a, tokens_b = truncate_seq_pair(tokens_a, tokens_b, max_len - 3)
    input_ids = [cls_id, *tokens_a, sep_id, *tokens_b, sep_id]
    token_type_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
    return input_ids, token_type_ids
