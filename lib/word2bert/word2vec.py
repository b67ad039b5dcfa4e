"""word2vec: skip-gram and CBOW with negative sampling (Mikolov et al. 2013), as in the original C code.

The pieces, in the order training uses them:

* ``keep_probability``: frequent words are dropped at random before windows are cut (subsampling);
* ``shrunk_windows``: every position gets its own radius, drawn uniformly from 1..window (near words count more);
* ``skipgram_pairs`` / ``cbow_examples``: the (input, target) examples the two architectures learn from;
* ``noise_distribution``: negative words are drawn from the unigram distribution raised to 3/4;
* ``negative_sampling_loss``: logistic regression of real (input, target) pairs against noise words.

Training is batched SGD on the rows a batch touches (sparse embeddings), with the C code's learning rate that falls
linearly to almost zero. ``Word2Vec`` follows gensim's interface; ``KeyedVectors`` (``model.wv``) holds the vectors
and answers neighbour, similarity and analogy questions, for GloVe as well. The last section builds the word
tests the chapter and the benchmark score models with: the toy world's category tests (similarity triples,
neighbour purity, category offsets) and WordNet's synonyms and plural analogies.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checkpoint import load_checkpoint, save_checkpoint
from .data import Vocab
from .data.toyworld import LEXICON
from .device import resolve
from .training import progress_bar

# --- the pieces ------------------------------------------------------------------------------------------------


def keep_probability(counts: torch.Tensor, sample: float) -> torch.Tensor:
    """Probability of keeping each occurrence of a word, the C code's subsampling formula.

    With f the word's count and t = sample * (total count): keep with (sqrt(f / t) + 1) * t / f, capped at 1; for
    a relative frequency r = f / (total count), that is sqrt(sample / r) + sample / r (the glossary's formula). The
    paper's discard probability, 1 - sqrt(sample / r), drops frequent words a little more often.
    Words rarer than about t are always kept; a word k times more frequent is kept about 1/sqrt(k) as often.
    ``sample <= 0`` keeps everything.
    """
    counts = counts.double()
    if sample <= 0:
        return torch.ones_like(counts)
    t = sample * counts.sum()
    keep = (torch.sqrt(counts / t) + 1) * t / counts  # count 0 gives inf: an unseen word is never dropped
    return keep.clamp(max=1.0).float()


def noise_distribution(counts: torch.Tensor, power: float = 0.75) -> torch.Tensor:
    """Unigram distribution raised to ``power`` (3/4 in the paper), normalised: where negative words come from."""
    weights = counts.double().pow(power) * (counts > 0)
    if weights.sum() <= 0:
        raise ValueError("the noise distribution needs at least one word with a positive count")
    return (weights / weights.sum()).float()


def shrunk_windows(sentence: torch.Tensor, window: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Context positions of every position of a flat corpus, with a radius drawn per position (dynamic window).

    sentence: [N], the sentence each position belongs to (windows never cross sentences). Each position draws a
    radius b uniformly from 1..window, as the C code does; its contexts are the positions within b in the same
    sentence. Returns positions [N, 2 * window] and which of them are contexts [N, 2 * window] (bool).
    """
    n, device = len(sentence), sentence.device
    offsets = torch.cat([torch.arange(-window, 0), torch.arange(1, window + 1)]).to(device)
    radius = torch.randint(1, window + 1, (n,), generator=generator, device=generator.device).to(device)
    positions = torch.arange(n, device=device)[:, None] + offsets
    valid = (positions >= 0) & (positions < n) & (offsets.abs() <= radius[:, None])
    positions = positions.clamp(0, max(n - 1, 0))
    valid &= sentence[positions] == sentence[:, None]
    return positions, valid


def skipgram_pairs(ids: torch.Tensor, sentence: torch.Tensor, window: int,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Skip-gram's (center, context) word-id pairs of a flat corpus ``ids`` [N] with a shrunk window each."""
    positions, valid = shrunk_windows(sentence, window, generator)
    return ids[:, None].expand_as(positions)[valid], ids[positions][valid]


def cbow_examples(ids: torch.Tensor, sentence: torch.Tensor, window: int,
                  generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CBOW's examples: (context ids [M, 2 * window], which are real [M, 2 * window], center ids [M]).

    Positions without any context (one-word sentences) give no example.
    """
    positions, valid = shrunk_windows(sentence, window, generator)
    has_context = valid.any(1)
    return ids[positions][has_context], valid[has_context], ids[has_context]


def negative_sampling_loss(hidden: torch.Tensor, target: torch.Tensor, noise: torch.Tensor,
                           noise_mask: torch.Tensor | None = None) -> torch.Tensor:
    """-log σ(h·v'_target) - Σ_k log σ(-h·v'_noise_k), summed over the batch.

    hidden: [B, D] input-side vectors, target: [B, D] and noise: [B, K, D] output-side vectors; noise_mask [B, K]
    zeroes noise words that equal the target (the C code skips those). Summed, not averaged: the C code updates
    after every pair, so a batch's gradient is the sum of its pairs' gradients.
    """
    real = F.logsigmoid((hidden * target).sum(-1))
    fake = F.logsigmoid(-torch.einsum("bd,bkd->bk", hidden, noise))
    if noise_mask is not None:
        fake = fake * noise_mask
    return -(real + fake.sum(-1)).sum()


def linear_learning_rate(alpha: float, min_alpha: float, progress: float) -> float:
    """The learning rate falls linearly from ``alpha`` to ``min_alpha`` over training (progress in [0, 1])."""
    return alpha - (alpha - min_alpha) * min(max(progress, 0.0), 1.0)


def encode_corpus(sentences: Iterable[Sequence[str]], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Flatten sentences into word ids [N] and sentence numbers [N]; words outside ``vocab`` are left out, as the
    C code and gensim leave out words below min_count."""
    ids, sentence = [], []
    for k, tokens in enumerate(sentences):
        row = [vocab.stoi[w] for w in tokens if w in vocab.stoi]
        ids += row
        sentence += [k] * len(row)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(sentence, dtype=torch.long)


# --- vectors and what we ask of them ---------------------------------------------------------------------------


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

    def most_similar(self, positive: str | Sequence[str] | None = None, negative: Sequence[str] = (),
                     topn: int = 10) -> list[tuple[str, float]]:
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


# --- the model -------------------------------------------------------------------------------------------------


@dataclass
class Word2VecConfig:
    vector_size: int = 100
    window: int = 5  # largest radius; each position draws its own from 1..window
    negative: int = 5  # noise words per real pair
    sg: int = 1  # 1: skip-gram, 0: CBOW
    min_count: int = 5
    sample: float = 1e-3  # subsampling threshold
    epochs: int = 5
    alpha: float = 0.025  # initial learning rate
    min_alpha: float = 1e-4  # final learning rate
    batch_size: int = 1024  # examples per SGD step
    seed: int = 0


class Word2VecModel(nn.Module):
    """Two tables: input vectors (the C code's syn0, the word vectors we keep) and output vectors (syn1neg)."""

    def __init__(self, vocab_size: int, vector_size: int):
        super().__init__()
        self.input_vectors = nn.Embedding(vocab_size, vector_size, sparse=True)
        self.output_vectors = nn.Embedding(vocab_size, vector_size, sparse=True)
        nn.init.uniform_(self.input_vectors.weight, -0.5 / vector_size, 0.5 / vector_size)  # as the C code
        nn.init.zeros_(self.output_vectors.weight)

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor, noise: torch.Tensor,
                input_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Summed loss. inputs: [B] center words (skip-gram) or [B, C] context words with input_mask (CBOW,
        whose input is the mean of the context vectors). targets: [B]; noise: [B, K]."""
        hidden = self.input_vectors(inputs)
        if input_mask is not None:
            mask = input_mask.unsqueeze(-1).to(hidden.dtype)
            summed, count = (hidden * mask).sum(1), mask.sum(1)
            # as the C code and gensim: the mean goes forward, but every context word gets the full error back
            hidden = summed / count + (summed - summed.detach()) * (1 - 1 / count)
        return negative_sampling_loss(hidden, self.output_vectors(targets), self.output_vectors(noise),
                                      noise != targets[:, None])


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


class Word2Vec(TrainedVectors):
    """Train word vectors on an iterable of token lists, with gensim's arguments and attributes.

    ``model.wv`` holds the vectors, ``model.loss_history`` the mean loss per example along training (one value
    per chunk of about 50k words), ``model.embed_sentence(tokens)`` gives [1, len(tokens), vector_size].
    """

    config_class = Word2VecConfig
    chunk_words = 50_000  # pairs are built and shuffled per chunk of this many corpus words

    def __init__(self, sentences: Iterable[Sequence[str]] | None = None, vector_size: int = 100, window: int = 5,
                 negative: int = 5, sg: int = 1, min_count: int = 5, sample: float = 1e-3, epochs: int = 5,
                 alpha: float = 0.025, seed: int = 0, device: str | torch.device | None = None, *,
                 min_alpha: float = 1e-4, batch_size: int = 1024, progress: bool = True):
        self.config = Word2VecConfig(vector_size, window, negative, sg, min_count, sample, epochs, alpha,
                                     min_alpha, batch_size, seed)
        self.device = resolve(device)
        self.loss_history = []
        if sentences is not None:
            sentences = [list(s) for s in sentences]
            self.build_vocab(sentences)
            self.train(sentences, progress=progress)

    @staticmethod
    def build_model(config: Word2VecConfig, vocab_size: int) -> Word2VecModel:
        return Word2VecModel(vocab_size, config.vector_size)

    def word_vectors(self) -> torch.Tensor:
        return self.model.input_vectors.weight

    def build_vocab(self, sentences: Sequence[Sequence[str]]) -> None:
        self.vocab = Vocab.build(sentences, min_count=self.config.min_count)
        torch.manual_seed(self.config.seed)
        self.model = self.build_model(self.config, len(self.vocab)).to(self.device)

    def train(self, sentences: Sequence[Sequence[str]], progress: bool = True) -> None:
        cfg, device = self.config, self.device
        ids, sentence = encode_corpus(sentences, self.vocab)
        counts = torch.tensor(self.vocab.counts, dtype=torch.float64)
        keep = keep_probability(counts, cfg.sample).to(device)
        noise = noise_distribution(counts).to(device)
        generator = torch.Generator(device=device).manual_seed(cfg.seed)
        shuffle = random.Random(cfg.seed)
        optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.alpha)
        total = cfg.epochs * len(ids)
        chunks = [(s, min(s + self.chunk_words, len(ids))) for s in range(0, len(ids), self.chunk_words)]
        done = 0
        with progress_bar(total=total, desc="word2vec", unit="word", show=progress) as bar:
            for _ in range(cfg.epochs):
                for start, end in chunks:
                    chunk_ids, chunk_sentence = ids[start:end].to(device), sentence[start:end].to(device)
                    kept = torch.rand(len(chunk_ids), generator=generator, device=device) < keep[chunk_ids]
                    examples = self._examples(chunk_ids[kept], chunk_sentence[kept], generator)
                    order = torch.randperm(len(examples[-1]), generator=generator, device=device)
                    loss_sum = 0.0
                    for b in range(0, len(order), cfg.batch_size):
                        lr = linear_learning_rate(cfg.alpha, cfg.min_alpha,
                                                  (done + (end - start) * b / len(order)) / total)
                        for group in optimizer.param_groups:
                            group["lr"] = lr
                        batch = order[b : b + cfg.batch_size]
                        inputs, mask, targets = (None if t is None else t[batch] for t in examples)
                        negatives = torch.multinomial(noise, len(batch) * cfg.negative, replacement=True,
                                                      generator=generator).view(len(batch), cfg.negative)
                        loss = self.model(inputs, targets, negatives, mask)
                        optimizer.zero_grad(set_to_none=True)
                        loss.backward()
                        optimizer.step()
                        loss_sum += loss.item()
                    self.loss_history.append(loss_sum / max(len(order), 1))
                    done += end - start
                    bar.update(end - start)
                    bar.set_postfix(loss=f"{self.loss_history[-1]:.3f}", lr=f"{lr:.4f}")
                shuffle.shuffle(chunks)  # a new chunk order each epoch; pairs inside a chunk are shuffled anyway

    def _examples(self, ids: torch.Tensor, sentence: torch.Tensor, generator: torch.Generator):
        """(inputs, input mask or None, targets) of one chunk: skip-gram predicts each context from the center,
        CBOW predicts the center from the mean of its context."""
        if self.config.sg:
            centers, contexts = skipgram_pairs(ids, sentence, self.config.window, generator)
            return centers, None, contexts
        return cbow_examples(ids, sentence, self.config.window, generator)


# --- similarity and analogy tests ------------------------------------------------------------------------------

# Toy-world categories for the word tests: lexicon slots whose words are one kind of thing, without the words that
# also belong to another slot or to a polysemous word's senses (cat is an animal and a pet; march is also a verb).
TEST_CATEGORIES = ("animal", "food", "fruit", "device", "room", "wild", "city", "color", "job", "workplace",
                   "vehicle", "instrument", "game", "tree", "metal", "number", "name")


def toyworld_categories() -> dict[str, list[str]]:
    """Category -> words, from the toy world's lexicon; each word in exactly one category."""
    seen: dict[str, int] = {}
    for _, words in LEXICON.values():
        for w in set(words):
            seen[w] = seen.get(w, 0) + 1
    return {c: [w for w in LEXICON[c][1] if seen[w] == 1] for c in TEST_CATEGORIES}


def similarity_triples(categories: dict[str, list[str]], n: int = 1000, seed: int = 0) -> list[tuple[str, str, str]]:
    """(word, same-category word, other-category word): a model passes a triple when the first pair is closer."""
    rng = random.Random(seed)
    names = sorted(categories)
    out = []
    for _ in range(n):
        same, other = rng.sample(names, 2)
        a, b = rng.sample(categories[same], 2)
        out.append((a, b, rng.choice(categories[other])))
    return out


def category_analogies(categories: dict[str, list[str]], n: int = 1000,
                       seed: int = 0) -> list[tuple[str, str, str, frozenset[str]]]:
    """Category offsets: questions a : b :: c : ? with a and c of one category and b of another, where any other
    word of b's category is right.

    They have the form of analogies but test categories, not relations: the toy world has no relations such as
    capital-of, and since a and c share a category, b - a + c stays near b, so 3CosAdd wins with one of b's
    neighbours. The score measures how tightly categories cluster, as ``neighbour_purity`` does; WordNet's
    plurals (``wordnet_word_tests``) are the course's analogies that test a relation."""
    rng = random.Random(seed)
    names = sorted(categories)
    out = []
    for _ in range(n):
        x, y = rng.sample(names, 2)
        a, c = rng.sample(categories[x], 2)
        b = rng.choice(categories[y])
        out.append((a, b, c, frozenset(categories[y]) - {b}))
    return out


def similarity_accuracy(wv: KeyedVectors, triples: Iterable[tuple[str, str, str]]) -> float:
    """Share of (a, b, c) with similarity(a, b) > similarity(a, c); triples with unknown words are skipped."""
    scored = [wv.similarity(a, b) > wv.similarity(a, c) for a, b, c in triples if a in wv and b in wv and c in wv]
    return sum(scored) / max(len(scored), 1)


def analogy_accuracy(wv: KeyedVectors, questions: Iterable[tuple[str, str, str, Iterable[str]]]) -> float:
    """Share of a : b :: c : ? whose 3CosAdd answer (query words excluded) is among the right ones."""
    scored = [wv.most_similar(positive=[b, c], negative=[a], topn=1)[0][0] in set(answers)
              for a, b, c, answers in questions if a in wv and b in wv and c in wv]
    return sum(scored) / max(len(scored), 1)


def neighbour_purity(wv: KeyedVectors, categories: dict[str, list[str]], topn: int = 5) -> float:
    """Mean share of a word's ``topn`` nearest neighbours (in the whole vocabulary) from its own category."""
    shares = []
    for words in categories.values():
        members = set(words)
        for w in words:
            if w in wv:
                shares.append(sum(n in members for n, _ in wv.most_similar(w, topn=topn)) / topn)
    return sum(shares) / max(len(shares), 1)


def wordnet_word_tests(wv: KeyedVectors, min_count_rank: int = 5000, n: int = 500, seed: int = 0):
    """Similarity triples and analogies from WordNet for words ``wv`` knows (among its ``min_count_rank`` most
    frequent): synonyms (two one-word lemmas of a synset) should be closer than a random word, and regular plurals
    (noun -> noun + "s") make analogy questions. Returns (triples, analogies); needs WordNet installed."""
    from .data import WordNet

    rng = random.Random(seed)
    known = set(wv.index_to_key[:min_count_rank])
    synsets = WordNet().synsets
    synonyms = sorted({tuple(sorted(p)) for s in synsets for p in _pairs(s.lemmas) if set(p) <= known})
    pool = sorted(known)
    triples = [(a, b, rng.choice(pool)) for a, b in rng.sample(synonyms, min(n, len(synonyms)))]
    nouns = sorted({lemma for s in synsets if s.pos == "n" for lemma in s.lemmas
                    if lemma in known and lemma + "s" in known and len(lemma) > 2})
    analogies = []
    for _ in range(n if len(nouns) > 1 else 0):
        a, c = rng.sample(nouns, 2)
        analogies.append((a, a + "s", c, frozenset({c + "s"})))
    return triples, analogies


def _pairs(lemmas: Sequence[str]) -> list[tuple[str, str]]:
    words = sorted({w for w in lemmas if " " not in w and "-" not in w})
    return [(a, b) for i, a in enumerate(words) for b in words[i + 1 :]]
