"""The measures every chapter shares, so that word2vec, ELMo, GPT and BERT are compared on equal terms.

* Word-sense probe: represent each sense of a polysemous word by the mean vector of its training occurrences,
  then label each test occurrence with the nearest sense by cosine (the nearest-neighbour method of Peters et al.
  2018, section 5.3). A static vector is the same in every sentence, so it scores at chance.
* Part-of-speech probe: a linear classifier (multinomial logistic regression) on frozen vectors of one layer.
  Its control task (Hewitt and Liang 2019) gives every word type a random tag instead; the gap between the two
  accuracies, the probe's selectivity, says how much of its score the layer's vectors, not the probe, earn.

Both are scored on held-out templates and repeated over seeds: ``mean ± std``. On real English the sense probe's
centroids come from random halves of each sense's sentences (``english_sense_probe``), or, for a few sentences, from
all the others in turn (``leave_one_out_sense_probe``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .data import (
    POS_TAGS,
    SenseOccurrence,
    ToyWorld,
    WordNet,
    plain_sense_occurrences,
    wordnet_available,
)
from .embedding import Embedder, embed_sentences
from .metrics import linear_probe_accuracy


def embed_occurrences(model: Embedder, occurrences: Sequence[SenseOccurrence]) -> torch.Tensor:
    """Vectors of the marked word in each occurrence: [num_layers + 1, N, D] (sentences embedded once each)."""
    sentences = list(dict.fromkeys(o.tokens for o in occurrences))
    row = {tokens: i for i, tokens in enumerate(sentences)}
    vectors = embed_sentences(model, sentences)
    return torch.stack([vectors[row[o.tokens]][:, o.index].float().cpu() for o in occurrences], dim=1)


def nearest_sense_accuracy(
    train: torch.Tensor, train_occ: Sequence[SenseOccurrence], test: torch.Tensor, test_occ: Sequence[SenseOccurrence]
) -> float:
    """Accuracy of nearest-sense-centroid labelling. train/test: [N, D] vectors of the occurrences.

    Only senses of the same word compete. Ties (as with static vectors) go to the first sense in sorted order.
    """
    rows_of: dict[str, list[int]] = {}
    for i, o in enumerate(train_occ):
        rows_of.setdefault(o.sense, []).append(i)
    senses_of: dict[str, list[str]] = {}  # each word's senses, in sorted order
    for sense in sorted(rows_of):
        senses_of.setdefault(train_occ[rows_of[sense][0]].word, []).append(sense)
    tests_of: dict[str, list[int]] = {}
    for i, o in enumerate(test_occ):
        tests_of.setdefault(o.word, []).append(i)
    correct = 0
    for word, rows in tests_of.items():  # a word at a time: its test vectors against its own centroids
        names = senses_of[word]
        centroids = torch.stack([train[rows_of[n]].mean(0) for n in names])
        sims = F.cosine_similarity(test[rows][:, None], centroids[None], dim=-1)
        best = torch.argmax(torch.round(sims, decimals=6), dim=1).tolist()
        correct += sum(names[b] == test_occ[i].sense for b, i in zip(best, rows))
    return correct / len(test_occ)


@dataclass
class ProbeResult:
    """Per-layer scores over several seeds."""

    name: str
    scores: torch.Tensor  # [num_seeds, num_layers + 1]

    @property
    def mean(self) -> list[float]:
        return self.scores.mean(0).tolist()

    @property
    def std(self) -> list[float]:
        return (self.scores.std(0, unbiased=False)).tolist()

    def best_layer(self) -> int:
        return int(self.scores.mean(0).argmax())

    def __str__(self) -> str:
        cells = [f"L{i}: {m:.3f} ± {s:.3f}" for i, (m, s) in enumerate(zip(self.mean, self.std))]
        return f"{self.name}: " + ", ".join(cells)


def sense_probe(
    model: Embedder, seeds: Sequence[int] = (0, 1, 2), n_train: int = 20, n_test: int = 20, cue: str | None = None
) -> ProbeResult:
    """Toy-world word-sense probe per layer: centroids from ``n_train`` training-template occurrences per sense,
    scored on ``n_test`` held-out-template occurrences per sense; ``cue`` keeps only "left" or "right" cues."""
    rows = []
    for seed in seeds:
        world = ToyWorld(seed)
        train_occ = world.sense_occurrences(n_train, "train")
        test_occ = [o for o in world.sense_occurrences(n_test, "heldout") if cue is None or o.cue == cue]
        tr, te = embed_occurrences(model, train_occ), embed_occurrences(model, test_occ)
        rows.append([nearest_sense_accuracy(tr[layer], train_occ, te[layer], test_occ) for layer in range(len(tr))])
    return ProbeResult("sense (toy world)", torch.tensor(rows))


def split_by_sense(
    occurrences: Sequence[SenseOccurrence], seed: int
) -> tuple[list[SenseOccurrence], list[SenseOccurrence]]:
    """Each sense's occurrences shuffled with ``seed`` and cut in two: half (at least one) for its centroid, the
    rest to label. No occurrence is on both sides."""
    by_sense: dict[str, list[SenseOccurrence]] = {}
    for o in occurrences:
        by_sense.setdefault(o.sense, []).append(o)
    rng = random.Random(seed)
    train, test = [], []
    for sense in sorted(by_sense):
        group = sorted(by_sense[sense], key=lambda o: (o.tokens, o.index))
        rng.shuffle(group)
        cut = max(1, len(group) // 2)
        train += group[:cut]
        test += group[cut:]
    return train, test


def chance_level(occurrences: Sequence[SenseOccurrence]) -> float:
    """The accuracy of guessing among each word's senses at random: the mean of 1 / (the word's senses)."""
    senses: dict[str, set[str]] = {}
    for o in occurrences:
        senses.setdefault(o.word, set()).add(o.sense)
    return sum(1 / len(senses[o.word]) for o in occurrences) / len(occurrences)


def english_sense_probe(
    model: Embedder,
    occurrences: Sequence[SenseOccurrence],
    seeds: Sequence[int] = (0, 1, 2),
    name: str = "sense (WordNet, held out)",
) -> ProbeResult:
    """The real-English sense probe per layer: for each seed, :func:`split_by_sense`, centroids from one half,
    nearest sense for the other, only a word's own senses competing (``nearest_sense_accuracy``). The
    occurrences are WordNet's held-out usage examples (``WordNet().sense_occurrences(pos=None)``) or any others;
    the score to beat is about their ``chance_level``."""
    feats = embed_occurrences(model, occurrences)
    row_of = {id(o): i for i, o in enumerate(occurrences)}
    rows = []
    for seed in seeds:
        train, test = split_by_sense(occurrences, seed)
        tr, te = [row_of[id(o)] for o in train], [row_of[id(o)] for o in test]
        rows.append([nearest_sense_accuracy(f[tr], train, f[te], test) for f in feats])
    return ProbeResult(name, torch.tensor(rows))


def leave_one_out_sense_probe(
    model: Embedder, occurrences: Sequence[SenseOccurrence], name: str = "sense (leave one out)"
) -> ProbeResult:
    """The nearest-sense rule with every occurrence held out in turn, per layer: each occurrence gets the nearest of
    its word's sense centroids computed from all the *other* occurrences (``nearest_sense_accuracy``). No random
    halving, so one score per layer (``scores`` is [1, num_layers + 1]), and every sentence is labelled once. A layer
    that gives the word the same vector everywhere ties, and scores chance on balanced senses."""
    feats = embed_occurrences(model, occurrences)
    everyone = range(len(occurrences))
    scores = []
    for f in feats:
        right = 0.0
        for i in everyone:
            others = [j for j in everyone if j != i]
            right += nearest_sense_accuracy(f[others], [occurrences[j] for j in others], f[i : i + 1], [occurrences[i]])
        scores.append(right / len(occurrences))
    return ProbeResult(name, torch.tensor([scores]))


def english_probes(model: Embedder) -> list[ProbeResult]:
    """The real-English sense tests a model card reports: WordNet's held-out usage examples (3 halvings, where
    WordNet is installed) and the book's plain sentences (5 halvings)."""
    results = [english_sense_probe(model, WordNet().sense_occurrences(pos=None))] if wordnet_available() else []
    return results + [english_sense_probe(model, plain_sense_occurrences(), range(5), "sense (plain sentences)")]


def _tagged_features(model: Embedder, sentences, control: dict[str, int] | None = None):
    """[num_layers + 1, N, D] vectors of every word and their N tags (the control task's, if given)."""
    feats = embed_sentences(model, [s.tokens for s in sentences])
    tags = [control[w] if control else POS_TAGS.index(t) for s in sentences for w, t in zip(s.tokens, s.tags)]
    return torch.cat(feats, dim=1).float().cpu(), torch.tensor(tags)


def control_tags(sentences, seed: int = 0) -> dict[str, int]:
    """Hewitt and Liang's control task for part of speech: every word type gets one tag, drawn at random from the
    tags' distribution over the sentences' words. A probe can only learn it by remembering word identities, so it
    bounds what a probe scores without any linguistic knowledge in the vectors."""
    tagged = [(w, POS_TAGS.index(t)) for s in sentences for w, t in zip(s.tokens, s.tags)]
    counts = torch.bincount(torch.tensor([t for _, t in tagged]), minlength=len(POS_TAGS)).float()
    words = sorted({w for w, _ in tagged})
    draws = torch.multinomial(counts, len(words), replacement=True, generator=torch.Generator().manual_seed(seed))
    return dict(zip(words, draws.tolist()))


def pos_probe(
    model: Embedder, seeds: Sequence[int] = (0, 1, 2), n_train: int = 300, n_test: int = 300, control: bool = False
) -> ProbeResult:
    """Part-of-speech tagging with a linear probe per layer: trained on training-template sentences, scored on
    held-out-template sentences; with ``control``, on the control task (``control_tags``) of the same words."""
    rows = []
    for seed in seeds:
        world = ToyWorld(seed)
        train, test = world.sentences(n_train, "train"), world.sentences(n_test, "heldout")
        tags = control_tags([*train, *test], seed) if control else None
        tr_x, tr_y = _tagged_features(model, train, tags)
        te_x, te_y = _tagged_features(model, test, tags)
        rows.append(
            [
                linear_probe_accuracy(tr_x[layer], tr_y, te_x[layer], te_y, len(POS_TAGS), seed=seed)
                for layer in range(tr_x.shape[0])
            ]
        )
    return ProbeResult("part of speech" + " (control task)" * control, torch.tensor(rows))
