"""The fine-tuning tasks of chapter 5, one object each: data, encoding, head, loss, predictions, gold and metrics.

BERT's paper (figure 4) fits four kinds of task with one encoder and a different head; the course has one
toy-world task of each kind:

* ``SENTIMENT``: single-sentence classification, ``[CLS] sentence [SEP]``, a label from [CLS];
* ``NLI``: sentence-pair classification (entailment), ``[CLS] premise [SEP] hypothesis [SEP]``;
* ``POS``: tagging, a part of speech per word, predicted on each word's first piece;
* ``QA``: extractive question answering, ``[CLS] question [SEP] passage [SEP]``, the answer a span of the passage.

A task says everything ``word2bert.finetune`` needs to know about it, so the fine-tuning loop never asks which
task it is running. A fifth task is one more object: a subclass of ``Task`` (or of one of the three kinds here),
added to ``TASKS``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from . import heads
from .data import NLI_LABELS, POS_TAGS, ToyWorld
from .metrics import accuracy, linear_probe_accuracy, macro_f1, qa_scores
from .wordpiece import WordPieceTokenizer, build_pair_input


@dataclass
class Features:
    """One encoded example: the inputs, the target, and what evaluation needs to map pieces back to words."""

    input_ids: list[int]
    token_type_ids: list[int]
    target: dict  # "label" (classification), "labels" (tagging, per piece) or "start"/"end" (QA, pieces)
    word_ids: list[int | None] = field(default_factory=list)  # for tagging and QA: the word of each piece
    task: Task | None = None  # which task encoded it: its `targets` batches the targets


def pieces(tokenizer: WordPieceTokenizer, words: Sequence[str]) -> tuple[list[int], list[int | None]]:
    """A word list's WordPiece ids and each piece's word, without [CLS] and [SEP] (for pair inputs)."""
    enc = tokenizer.encode_words(list(words))
    return enc.input_ids[1:-1], enc.word_ids[1:-1]


def piece_labels(
    word_ids: Sequence[int | None], word_labels: Sequence[int], label_all_pieces: bool = False
) -> list[int]:
    """Word labels moved onto WordPiece pieces: the first piece of each word gets its word's label (every piece with
    ``label_all_pieces``); later pieces and special tokens (word id None) get -100, which the loss ignores."""
    labels, previous = [], None
    for w in word_ids:
        first = w is not None and w != previous
        labels.append(word_labels[w] if w is not None and (first or label_all_pieces) else -100)
        previous = w
    return labels


class Task:
    """What one fine-tuning task is. ``name`` is how pages and configs call it, ``metric`` its main score."""

    name: str
    metric: str

    def examples(self, world: ToyWorld, n: int, split: str) -> list:
        """``n`` examples from the templates of ``split`` ("train" or "heldout")."""
        raise NotImplementedError

    def make_head(self, encoder: nn.Module) -> nn.Module:
        raise NotImplementedError

    def encode(
        self, tokenizer: WordPieceTokenizer, example, max_length: int = 128, label_all_pieces: bool = False
    ) -> Features:
        raise NotImplementedError

    def targets(self, features: Sequence[Features], T: int) -> dict[str, torch.Tensor]:
        """The batch's targets as tensors, for inputs padded to length ``T``."""
        raise NotImplementedError

    def loss(self, outputs, batch: dict) -> torch.Tensor:
        raise NotImplementedError

    def decode(self, outputs, features: Sequence[Features], examples: Sequence, max_answer_len: int) -> list:
        """One prediction per example from the head's outputs on a batch, in the form ``gold`` has."""
        raise NotImplementedError

    def gold(self, example) -> Any:
        """The answer a prediction is compared with."""
        raise NotImplementedError

    def score(self, predictions: Sequence, golds: Sequence) -> dict[str, float]:
        raise NotImplementedError

    def baseline(self, train: Sequence, test: Sequence, seed: int) -> dict[str, float]:
        """The task's scores for a model without pre-training, trained on ``train`` and scored on ``test``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<task {self.name}>"


class Classification(Task):
    """A label per input of one or two word sequences (``parts``), read from [CLS] by a ``ClassificationHead``.
    The baseline is logistic regression on bags of words (of each part, side by side)."""

    metric = "accuracy"

    def __init__(
        self,
        name: str,
        num_labels: int,
        generate: Callable[[ToyWorld, int, str], list],
        parts: Callable[[Any], list[Sequence[str]]],
    ):
        self.name, self.num_labels, self.generate, self.parts = name, num_labels, generate, parts

    def examples(self, world, n, split):
        return self.generate(world, n, split)

    def make_head(self, encoder):
        head = heads.ClassificationHead(encoder.pooler.in_features, self.num_labels)
        head.pooler.load_state_dict(encoder.pooler.state_dict())  # start from the pooler NSP trained
        return head

    def encode(self, tokenizer, example, max_length=128, label_all_pieces=False):
        parts = self.parts(example)
        if len(parts) == 1:
            enc = tokenizer.encode_words(list(parts[0]), max_length)
            ids, types = enc.input_ids, enc.token_type_ids
        else:
            (a, _), (b, _) = (pieces(tokenizer, p) for p in parts)
            ids, types = build_pair_input(a, b, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, max_len=max_length)
        return Features(ids, types, {"label": example.label}, task=self)

    def targets(self, features, T):
        return {"labels": torch.tensor([f.target["label"] for f in features])}

    def loss(self, outputs, batch):
        return torch.nn.functional.cross_entropy(outputs, batch["labels"])

    def decode(self, outputs, features, examples, max_answer_len):
        return outputs.argmax(-1).tolist()

    def gold(self, example):
        return example.label

    def score(self, predictions, golds):
        return {"accuracy": accuracy(predictions, golds), "macro_f1": macro_f1(predictions, golds, self.num_labels)}

    def baseline(self, train, test, seed):
        n_parts = len(self.parts(train[0]))
        vocab = {w: i for i, w in enumerate(sorted({w for x in train for p in self.parts(x) for w in p}))}

        def features(xs):
            return torch.cat([_bag_of_words([self.parts(x)[k] for x in xs], vocab) for k in range(n_parts)], 1)

        acc = linear_probe_accuracy(
            features(train),
            torch.tensor([x.label for x in train]),
            features(test),
            torch.tensor([x.label for x in test]),
            self.num_labels,
            seed=seed,
        )
        return {"accuracy": acc}


class Tagging(Task):
    """A tag per word from a ``TaggingHead`` on every piece. BERT labels and predicts each word's first piece;
    ``label_all_pieces`` trains on every piece instead. The baseline tags each word with its most frequent tag
    in training (unseen words: the most frequent tag overall)."""

    metric = "token_accuracy"

    def __init__(self, name: str, tags: Sequence[str], generate: Callable[[ToyWorld, int, str], list]):
        self.name, self.tags, self.generate = name, list(tags), generate

    def examples(self, world, n, split):
        return self.generate(world, n, split)

    def make_head(self, encoder):
        return heads.TaggingHead(encoder.pooler.in_features, len(self.tags))

    def encode(self, tokenizer, example, max_length=128, label_all_pieces=False):
        enc = tokenizer.encode_words(list(example.tokens), max_length)
        labels = piece_labels(enc.word_ids, [self.tags.index(tag) for tag in example.tags], label_all_pieces)
        return Features(enc.input_ids, enc.token_type_ids, {"labels": labels}, enc.word_ids, task=self)

    def targets(self, features, T):
        return {"labels": torch.tensor([f.target["labels"] + [-100] * (T - len(f.input_ids)) for f in features])}

    def loss(self, outputs, batch):
        return heads.tagging_loss(outputs, batch["labels"])

    def decode(self, outputs, features, examples, max_answer_len):
        out = []
        for f, row in zip(features, outputs.argmax(-1).tolist()):
            firsts = {}
            for pos, w in enumerate(f.word_ids):
                if w is not None and w not in firsts:
                    firsts[w] = self.tags[row[pos]]
            out.append([firsts[w] for w in sorted(firsts)])
        return out

    def gold(self, example):
        return list(example.tags)

    def score(self, predictions, golds):
        pairs = [(p, g) for ps, gs in zip(predictions, golds) for p, g in zip(ps, gs)]
        return {"token_accuracy": sum(p == g for p, g in pairs) / len(pairs)}

    def baseline(self, train, test, seed):
        counts: dict[str, Counter] = {}
        for s in train:
            for w, t in zip(s.tokens, s.tags):
                counts.setdefault(w, Counter())[t] += 1
        overall = Counter(t for s in train for t in s.tags).most_common(1)[0][0]
        predictions = [[counts[w].most_common(1)[0][0] if w in counts else overall for w in s.tokens] for s in test]
        return self.score(predictions, [self.gold(x) for x in test])


class SpanExtraction(Task):
    """Extractive question answering: the question first, the passage second; a ``SpanHead`` scores each piece as
    the answer's start and end, and ``best_span`` decodes the best valid span of the passage. The baseline answers
    with the last word of the passage sentence that shares most words with the question.

    Its splits: "heldout" holds out the passage sentences and keeps the training questions' wording, and
    "heldout-questions" does the opposite."""

    name, metric = "qa", "exact_match"

    def examples(self, world, n, split):
        if split == "heldout":
            return world.qa(n, "heldout", questions="train")  # new passage sentences, familiar questions
        if split == "heldout-questions":
            return world.qa(n, "train", questions="heldout")  # passages of the training shapes, new wording
        return world.qa(n, split)

    def make_head(self, encoder):
        return heads.SpanHead(encoder.pooler.in_features)

    def encode(self, tokenizer, example, max_length=128, label_all_pieces=False):
        """The answer's start and end become the first piece of its first word and the last piece of its last."""
        q, _ = pieces(tokenizer, example.question)
        p, p_words = pieces(tokenizer, example.passage)
        ids, types = build_pair_input(q, p, cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, max_len=max_length)
        offset = len(q) + 2  # [CLS] question [SEP]
        word_ids = [None] * offset + p_words[: len(ids) - offset - 1] + [None]
        pieces_of = [i for i, w in enumerate(word_ids) if w is not None]
        starts = [i for i in pieces_of if word_ids[i] == example.start]
        ends = [i for i in pieces_of if word_ids[i] == example.end]
        # A passage cut by max_length may lose the answer: position 0 ([CLS]) then marks "no answer here".
        start, end = (starts[0], ends[-1]) if starts and ends else (0, 0)
        return Features(ids, types, {"start": start, "end": end}, word_ids, task=self)

    def targets(self, features, T):
        return {
            "start_positions": torch.tensor([f.target["start"] for f in features]),
            "end_positions": torch.tensor([f.target["end"] for f in features]),
        }

    def loss(self, outputs, batch):
        return heads.span_loss(*outputs, batch["start_positions"], batch["end_positions"])

    def decode(self, outputs, features, examples, max_answer_len):
        out = []
        for f, x, s_logits, e_logits in zip(features, examples, *outputs):
            T = len(f.input_ids)
            context = torch.tensor([w is not None for w in f.word_ids], device=s_logits.device)
            s, e = heads.best_span(s_logits[:T], e_logits[:T], context, max_answer_len)
            out.append(tuple(x.passage[f.word_ids[s] : f.word_ids[e] + 1]))
        return out

    def gold(self, example):
        return tuple(example.answer)

    def score(self, predictions, golds):
        return qa_scores(predictions, golds)

    def baseline(self, train, test, seed):
        return self.score([_overlap_answer(x) for x in test], [self.gold(x) for x in test])


def _bag_of_words(token_lists: Sequence[Sequence[str]], vocab: dict[str, int]) -> torch.Tensor:
    x = torch.zeros(len(token_lists), len(vocab))
    for row, tokens in enumerate(token_lists):
        for t in tokens:
            if t in vocab:
                x[row, vocab[t]] += 1
    return x


def _overlap_answer(example) -> tuple[str, ...]:
    sentences, current = [], []
    for w in example.passage:
        current.append(w)
        if w == ".":
            sentences.append(current)
            current = []
    question = set(example.question)
    best = max(sentences, key=lambda s: len(question & set(s)))
    return (best[-2],)


SENTIMENT = Classification("sentiment", 2, ToyWorld.sentiment, lambda x: [x.tokens])
NLI = Classification("nli", len(NLI_LABELS), ToyWorld.nli, lambda x: [x.premise, x.hypothesis])
POS = Tagging("pos", POS_TAGS, ToyWorld.sentences)
QA = SpanExtraction()
TASKS = {task.name: task for task in (SENTIMENT, NLI, POS, QA)}


def get_task(task: str | Task) -> Task:
    """A task object from its name (or the object itself)."""
    if isinstance(task, Task):
        return task
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; the tasks are {tuple(TASKS)}")
    return TASKS[task]
