"""Byte-level byte-pair encoding, as in GPT-2 (Sennrich et al. 2016; Radford et al. 2019).

Text is UTF-8 bytes, so nothing is ever unknown and decoding gives back the exact text. Each byte is shown as
a printable character (``bytes_to_unicode``: the space becomes "Ġ"), the text is cut into chunks by GPT-2's
regular expression (words with their leading space, numbers, punctuation, whitespace), and inside each chunk
the most frequent adjacent pair of symbols is merged into a new symbol, again and again, until the vocabulary
has the size asked for. Training follows Hugging Face ``tokenizers``' BpeTrainer (ties between equally
frequent pairs go to the pair of smaller ids), so both learn the same merges from the same text.

A trained model's tokenizer comes with its own vocabulary and merges: ``BPETokenizer.from_gguf`` reads them from a
GGUF file (SmolLM2's, for ``word2bert.llama``), with the ids the model was trained with.
"""

from __future__ import annotations

import heapq
import json
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from pathlib import Path

import regex

from .training import progress_bar

# GPT-2's pre-tokenisation: contractions, an optional space then letters, numbers or other symbols, whitespace.
GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
# StarCoder's and SmolLM's first step (Hugging Face's ``Digits(individual_digits=True)``, llama.cpp's "smollm"):
# every digit is a chunk of its own, before GPT-2's pattern splits the text between them; "2024" is four tokens.
DIGIT = regex.compile(r"(\p{N})")
ENDOFTEXT = "<|endoftext|>"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from the 256 byte values to printable characters: printable Latin-1 bytes stand for
    themselves, the others (control characters, space, ...) are moved to code points from 256 on."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def pretokenize(text: str, individual_digits: bool = False) -> list[str]:
    """GPT-2's chunks of ``text``, each written in the byte alphabet ("Ġworld" for " world"); with
    ``individual_digits``, each digit is first cut out as a chunk of its own."""
    pieces = [p for p in DIGIT.split(text) if p] if individual_digits else [text]
    chunks = [chunk for piece in pieces for chunk in GPT2_PATTERN.findall(piece)]
    return ["".join(BYTE_TO_CHAR[b] for b in chunk.encode("utf-8")) for chunk in chunks]


class BPETokenizer:
    """A byte-level BPE vocabulary: special tokens, then the 256 byte symbols, then one symbol per merge.

    A pre-trained model's tokenizer gives its own ``vocab`` (every token, in id order) instead, and SmolLM's cuts
    out ``individual_digits`` before BPE."""

    def __init__(
        self,
        merges: Sequence[tuple[str, str]],
        special_tokens: Sequence[str] = (ENDOFTEXT,),
        vocab: Sequence[str] | None = None,
        individual_digits: bool = False,
    ):
        self.merges = [tuple(m) for m in merges]
        self.special_tokens = list(special_tokens)
        self.vocab = None if vocab is None else list(vocab)
        self.individual_digits = individual_digits
        if vocab is None:
            tokens = self.special_tokens + sorted(BYTE_TO_CHAR.values())
            for a, b in self.merges:
                tokens.append(a + b)
        else:
            tokens, known = self.vocab, set(self.vocab)
            if len(known) != len(tokens):
                raise ValueError("vocab: every token once")
            missing = [t for t in [*self.special_tokens, *(a + b for a, b in self.merges)] if t not in known]
            if missing:
                raise ValueError(f"vocab lacks {len(missing)} special tokens or merged symbols, e.g. {missing[:3]}")
        self.token_to_id: dict[str, int] = {}
        for t in tokens:  # a merge can rebuild a string an earlier merge made: it keeps its first id
            self.token_to_id.setdefault(t, len(self.token_to_id))
        self.id_to_token = {i: t for t, i in self.token_to_id.items()}
        self.ranks = {pair: rank for rank, pair in reversed(list(enumerate(self.merges)))}
        self._special = (
            regex.compile("(" + "|".join(regex.escape(s) for s in sorted(special_tokens, key=len, reverse=True)) + ")")
            if special_tokens
            else None
        )
        self._cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.token_to_id)

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        min_frequency: int = 2,
        special_tokens: Sequence[str] = (ENDOFTEXT,),
        progress: bool = True,
    ) -> BPETokenizer:
        """Learn merges on ``texts`` until the vocabulary (special tokens and 256 bytes included) has
        ``vocab_size`` entries, or no pair occurs ``min_frequency`` times any more."""
        base = cls([], special_tokens)
        word_counts = Counter(
            chunk for text in texts for piece in base._split_special(text) for chunk in pretokenize(piece)
        )
        symbols = {tuple(w): n for w, n in word_counts.items()}
        tokens = [base.id_to_token[i] for i in range(base.vocab_size)]
        merges = learn_merges(symbols, tokens, vocab_size, min_frequency, progress=progress)
        return cls(merges, special_tokens)

    def _split_special(self, text: str) -> list[str]:
        """``text`` cut around special tokens, which are kept as their own pieces."""
        return [p for p in self._special.split(text) if p] if self._special else [text]

    def _bpe(self, chunk: str) -> list[int]:
        """Merge the symbols of one chunk, always the pair of lowest rank first (GPT-2's ``bpe``).

        A byte that a pre-trained ``vocab`` lacks (one no UTF-8 text holds, such as 0xFF in SmolLM2's) is left out,
        as Hugging Face's tokenizer leaves it out."""
        if chunk not in self._cache:
            word = list(chunk)
            while len(word) > 1:
                best = min(pairwise(word), key=lambda p: self.ranks.get(p, len(self.ranks)))
                if best not in self.ranks:
                    break
                word = _merge(word, best, best[0] + best[1])
            self._cache[chunk] = [self.token_to_id[t] for t in word if t in self.token_to_id]
        return self._cache[chunk]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; special-token strings in it become their special ids."""
        ids = []
        for piece in self._split_special(text):
            if piece in self.special_tokens:
                ids.append(self.token_to_id[piece])
            else:
                for chunk in pretokenize(piece, self.individual_digits):
                    ids.extend(self._bpe(chunk))
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` as strings in the byte alphabet."""
        return [self.id_to_token[i] for i in self.encode(text)]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``: exact for ids from ``encode``; invalid UTF-8 (a cut-off character) becomes U+FFFD."""
        data = bytearray()
        for i in ids:
            t = self.id_to_token[int(i)]
            data += t.encode("utf-8") if t in self.special_tokens else bytes(CHAR_TO_BYTE[c] for c in t)
        return data.decode("utf-8", errors="replace")

    def encode_words(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Ids of the words joined by spaces, and for each id the index of the word it belongs to."""
        ids, word_ids = [], []
        for n, w in enumerate(words):
            piece = self.encode(w if n == 0 else " " + w)
            ids += piece
            word_ids += [n] * len(piece)
        return ids, word_ids

    def to_dict(self) -> dict:
        """Everything that rebuilds the tokenizer (``from_dict``), e.g. inside a model checkpoint's metadata."""
        data = {"special_tokens": self.special_tokens, "merges": [list(m) for m in self.merges]}
        if self.vocab is not None:
            data["vocab"] = self.vocab
        if self.individual_digits:
            data["individual_digits"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict) -> BPETokenizer:
        return cls(
            [tuple(m) for m in data["merges"]],
            data["special_tokens"],
            data.get("vocab"),
            data.get("individual_digits", False),
        )

    @classmethod
    def from_gguf(cls, reader) -> BPETokenizer:
        """The tokenizer a GGUF file describes (a ``gguf.GGUFReader``): its vocabulary in id order, its merges,
        its control tokens (``<|im_start|>``, ...) kept whole, and its pre-tokenisation. Only byte-level BPE
        (``tokenizer.ggml.model`` "gpt2") with GPT-2's pattern, or SmolLM's (digits first), is read."""
        fields = reader.fields
        kind, pre = (fields[f"tokenizer.ggml.{k}"].contents() for k in ("model", "pre"))
        if kind != "gpt2" or pre not in PRE_TOKENIZERS:
            raise ValueError(f"only byte-level BPE with a pre-tokenizer of {sorted(PRE_TOKENIZERS)}, not {kind}/{pre}")
        tokens = fields["tokenizer.ggml.tokens"].contents()
        control = [t for t, kind in zip(tokens, fields["tokenizer.ggml.token_type"].contents()) if kind == GGUF_CONTROL]
        merges = (
            [tuple(m.split(" ")) for m in fields["tokenizer.ggml.merges"].contents()]
            if "tokenizer.ggml.merges" in fields
            else []
        )
        return cls(merges, control, vocab=tokens, individual_digits=PRE_TOKENIZERS[pre])

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False)
        return path

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))


# llama.cpp's names for pre-tokenisations (``tokenizer.ggml.pre``), with whether digits come out one by one first.
PRE_TOKENIZERS = {"gpt2": False, "smollm": True, "starcoder": True}
GGUF_CONTROL = 3  # llama.cpp's token type of a control token (special: kept whole, never merged)


def learn_merges(
    words: dict[tuple[str, ...], int],
    tokens: list[str],
    vocab_size: int,
    min_frequency: int = 2,
    join: Callable[[str, str], str] = operator.add,
    progress: bool = True,
) -> list[tuple[str, str]]:
    """BPE training: merge the most frequent adjacent pair of symbols until ``tokens`` has ``vocab_size`` entries.

    words: each word as a tuple of initial symbols, with its count. tokens: the initial vocabulary, in id order
    (every symbol of ``words`` in it); extended in place. ``join`` makes the new symbol of a pair. As in HF
    ``tokenizers``, ties go to the pair with smaller ids and training stops below ``min_frequency``.
    """
    token_to_id = {t: i for i, t in enumerate(tokens)}
    seqs = [[token_to_id[c] for c in w] for w in words]
    counts = list(words.values())
    pair_counts: Counter = Counter()
    where = defaultdict(set)  # pair -> the words it occurs in
    for i, w in enumerate(seqs):
        for pair in pairwise(w):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    # A max-heap on (count, smaller pair first); entries go stale as counts fall and are refreshed when popped.
    heap = [(-c, pair) for pair, c in pair_counts.items()]
    heapq.heapify(heap)

    merges = []
    bar = progress_bar(total=vocab_size - len(tokens), desc="merges", show=progress)
    while len(tokens) < vocab_size and heap:
        neg, pair = heapq.heappop(heap)
        if -neg != pair_counts[pair]:
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))
            continue
        if -neg < max(1, min_frequency):
            break
        new = join(tokens[pair[0]], tokens[pair[1]])
        if new not in token_to_id:  # a merge can rebuild a symbol an earlier merge made: it keeps its id
            token_to_id[new] = len(tokens)
            tokens.append(new)
            bar.update()
        new_id = token_to_id[new]
        merges.append((tokens[pair[0]], tokens[pair[1]]))
        grown = set()
        for i in where.pop(pair):
            w = seqs[i]
            before = Counter(pairwise(w))
            seqs[i] = w = _merge(w, pair, new_id)
            after = Counter(pairwise(w))
            for p in before | after:
                delta = after[p] - before[p]
                if delta:
                    pair_counts[p] += delta * counts[i]
                if delta > 0:
                    where[p].add(i)
                    grown.add(p)
        del pair_counts[pair]
        for p in grown:
            heapq.heappush(heap, (-pair_counts[p], p))
    bar.close()
    return merges


def _merge(word: list, pair: tuple, new) -> list:
    """``word`` with every occurrence of ``pair`` replaced by ``new``, left to right without overlaps."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
