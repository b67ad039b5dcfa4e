"""Fine-tuning BERT for the course's four kinds of task (Devlin et al. 2019, section 4 and figure 4).

One pre-trained encoder, one small new head per task, all weights trained together for a few epochs:

* single-sentence classification (toy-world sentiment): ``ClassificationHead`` on the [CLS] vector;
* sentence-pair classification (toy-world entailment): the same head, the pair as ``[CLS] A [SEP] B [SEP]``;
* token tagging (toy-world part of speech): ``TaggingHead`` on every piece, scored on each word's first piece;
* extractive question answering (toy-world passages): ``SpanHead`` gives start and end logits; ``best_span``
  picks the best valid span of the passage.

The feature-based alternative (``feature_based=True``) freezes the encoder and feeds the head a learned scalar mix
of its layers, as ELMo does. Every score is on held-out templates, against a simple baseline per task
(``baseline``), and ``run_seeds`` repeats a run over seeds for a mean ± spread.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from .bert import Bert
from .data import NLI_LABELS, POS_TAGS, ToyWorld
from .device import resolve
from .elmo import ScalarMix
from .pretraining import build_pair_input
from .probes import linear_probe_accuracy
from .training import TrainConfig, to_device, train
from .transformer import MultiHeadSelfAttention
from .wordpiece import WordPieceTokenizer

TASKS = ("sentiment", "nli", "pos", "qa")
NUM_LABELS = {"sentiment": 2, "nli": len(NLI_LABELS), "pos": len(POS_TAGS)}
METRICS = {"sentiment": "accuracy", "nli": "accuracy", "pos": "token_accuracy", "qa": "exact_match"}

# --- heads ------------------------------------------------------------------------------------------------------


class ClassificationHead(nn.Module):
    """A sentence's (or pair's) label from its first vector, [CLS]: BERT's pooler (dense + tanh), dropout, a linear
    layer to the labels. ``make_head`` starts the pooler from the pre-trained one (trained by NSP)."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float = 0.1):
        super().__init__()
        self.pooler = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """[B, T, H] -> raw logits [B, num_labels]."""
        pooled = torch.tanh(self.pooler(hidden_states[:, 0]))
        return self.classifier(self.dropout(pooled))


class TaggingHead(nn.Module):
    """One label per piece: dropout, then a linear layer on every vector. [B, T, H] -> [B, T, num_tags]."""

    def __init__(self, hidden_size: int, num_tags: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_tags)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(hidden_states))


class SpanHead(nn.Module):
    """Start and end logits of the answer from one linear layer (the paper's S and E vectors):
    [B, T, H] -> (start_logits [B, T], end_logits [B, T])."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.qa_outputs = nn.Linear(hidden_size, 2)

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.qa_outputs(hidden_states).unbind(dim=-1)
        return start, end


def tagging_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the labelled positions (labels -100 are ignored: padding, specials, later pieces)."""
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


def span_loss(
    start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor, end_positions: torch.Tensor
) -> torch.Tensor:
    """(CE(start) + CE(end)) / 2: the answer's first and last piece, each a softmax over the positions."""
    return (F.cross_entropy(start_logits, start_positions) + F.cross_entropy(end_logits, end_positions)) / 2


def best_span(
    start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor, max_answer_len: int
) -> tuple[int, int]:
    """The span (s, e) maximising start_logits[s] + end_logits[e] with s <= e, e - s + 1 <= max_answer_len and both
    ends in the context (the passage, not the question or special tokens). Scores all T x T pairs at once."""
    T = start_logits.size(-1)
    scores = start_logits[:, None] + end_logits[None, :]
    i = torch.arange(T, device=scores.device)
    length = i[None, :] - i[:, None] + 1
    valid = (length >= 1) & (length <= max_answer_len) & context_mask[:, None] & context_mask[None, :]
    if not valid.any():
        raise ValueError("no valid span: the context mask is empty or max_answer_len < 1")
    best = scores.masked_fill(~valid, float("-inf")).flatten().argmax().item()
    return divmod(best, T)


# --- the model: encoder + head ----------------------------------------------------------------------------------


class FineTuner(nn.Module):
    """A BERT encoder with a task head. With ``feature_based`` the encoder is frozen (and kept in eval mode) and
    the head reads a trained scalar mix of its layers (ELMo's recipe); otherwise every weight is trained and the
    head reads the last layer (BERT's recipe)."""

    def __init__(self, encoder: Bert, head: nn.Module, feature_based: bool = False):
        super().__init__()
        self.encoder, self.head, self.feature_based = encoder, head, feature_based
        if feature_based:
            encoder.requires_grad_(False)
            self.mix = ScalarMix(encoder.config.num_hidden_layers + 1)

    def train(self, mode: bool = True) -> FineTuner:
        super().train(mode)
        if self.feature_based:
            self.encoder.eval()  # a frozen feature extractor: no dropout
        return self

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        if self.feature_based:
            with torch.no_grad():
                states = self.encoder(input_ids, token_type_ids, attention_mask, output_hidden_states=True)
            hidden = self.mix(states.hidden_states)
        else:
            hidden = self.encoder(input_ids, token_type_ids, attention_mask).last_hidden_state
        return self.head(hidden)


def set_dropout(encoder: Bert, p: float) -> None:
    """Set every dropout rate of ``encoder`` (embeddings, attention weights, sub-layer outputs) to ``p``. BERT is
    fine-tuned with 0.1; our small checkpoint was pre-trained without dropout, so fine-tuning switches it on."""
    for m in encoder.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
        elif isinstance(m, MultiHeadSelfAttention):
            m.dropout = p
    encoder.config = replace(encoder.config, dropout=p)


def make_head(task: str, encoder: Bert) -> nn.Module:
    """The task's head, sized for ``encoder``; a classification head's pooler starts from the encoder's."""
    hidden = encoder.config.hidden_size
    if task in ("sentiment", "nli"):
        head = ClassificationHead(hidden, NUM_LABELS[task])
        head.pooler.load_state_dict(encoder.pooler.state_dict())
        return head
    if task == "pos":
        return TaggingHead(hidden, NUM_LABELS[task])
    if task == "qa":
        return SpanHead(hidden)
    raise ValueError(f"unknown task {task!r}; the tasks are {TASKS}")


# --- data: toy-world examples as encoder inputs -----------------------------------------------------------------


def examples(task: str, n: int, split: str = "train", seed: int = 0) -> list:
    """``n`` toy-world examples of ``task`` from the templates of ``split`` ("train" or "heldout"; for QA,
    "heldout" holds out the passage sentences and keeps the training questions' wording, and "heldout-questions"
    does the opposite). ``split="unseen"`` gives new examples of the *training* templates (another world's seed),
    not the training examples themselves: a test of the task without the shift to new templates."""
    world = ToyWorld(seed + 1000 if split == "unseen" else seed)
    split = "train" if split == "unseen" else split
    if task == "qa" and split == "heldout":
        return world.qa(n, "heldout", questions="train")  # new passage sentences, familiar questions
    if task == "qa" and split == "heldout-questions":
        return world.qa(n, "train", questions="heldout")  # passages of the training shapes, new wording
    if task == "sentiment":
        return world.sentiment(n, split)
    if task == "nli":
        return world.nli(n, split)
    if task == "pos":
        return world.sentences(n, split)
    if task == "qa":
        return world.qa(n, split)
    raise ValueError(f"unknown task {task!r}; the tasks are {TASKS}")


@dataclass
class Features:
    """One encoded example: the inputs, the target, and what evaluation needs to map pieces back to words."""

    input_ids: list[int]
    token_type_ids: list[int]
    target: dict  # "label" (classification), "labels" (tagging, per piece) or "start"/"end" (QA, pieces)
    word_ids: list[int | None] = field(default_factory=list)  # for tagging and QA: the word of each piece


def _pieces(tokenizer: WordPieceTokenizer, words: Sequence[str]) -> tuple[list[int], list[int | None]]:
    enc = tokenizer.encode_words(list(words))
    return enc.input_ids[1:-1], enc.word_ids[1:-1]


def piece_labels(word_ids: Sequence[int | None], word_labels: Sequence[int], label_all_pieces: bool = False) -> list[int]:
    """Word labels moved onto WordPiece pieces: the first piece of each word gets its word's label (every piece with
    ``label_all_pieces``); later pieces and special tokens (word id None) get -100, which the loss ignores."""
    labels, previous = [], None
    for w in word_ids:
        first = w is not None and w != previous
        labels.append(word_labels[w] if w is not None and (first or label_all_pieces) else -100)
        previous = w
    return labels


def encode(
    task: str, tokenizer: WordPieceTokenizer, example, max_length: int = 128, label_all_pieces: bool = False
) -> Features:
    """One example as BERT's input. Tagging labels the first piece of each word (or every piece with
    ``label_all_pieces``) and gives -100 elsewhere; QA puts the question first and the passage second, and the
    answer's start and end become the first piece of its first word and the last piece of its last word."""
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    if task == "sentiment":
        enc = tokenizer.encode_words(list(example.tokens), max_length)
        return Features(enc.input_ids, enc.token_type_ids, {"label": example.label})
    if task == "nli":
        a, _ = _pieces(tokenizer, example.premise)
        b, _ = _pieces(tokenizer, example.hypothesis)
        ids, types = build_pair_input(a, b, cls_id=cls, sep_id=sep, max_len=max_length)
        return Features(ids, types, {"label": example.label})
    if task == "pos":
        enc = tokenizer.encode_words(list(example.tokens), max_length)
        labels = piece_labels(enc.word_ids, [POS_TAGS.index(tag) for tag in example.tags], label_all_pieces)
        return Features(enc.input_ids, enc.token_type_ids, {"labels": labels}, enc.word_ids)
    if task == "qa":
        q, _ = _pieces(tokenizer, example.question)
        p, p_words = _pieces(tokenizer, example.passage)
        ids, types = build_pair_input(q, p, cls_id=cls, sep_id=sep, max_len=max_length)
        offset = len(q) + 2  # [CLS] question [SEP]
        word_ids = [None] * offset + p_words[: len(ids) - offset - 1] + [None]
        pieces_of = [i for i, w in enumerate(word_ids) if w is not None]
        starts = [i for i in pieces_of if word_ids[i] == example.start]
        ends = [i for i in pieces_of if word_ids[i] == example.end]
        # A passage cut by max_length may lose the answer: position 0 ([CLS]) then marks "no answer here".
        start, end = (starts[0], ends[-1]) if starts and ends else (0, 0)
        return Features(ids, types, {"start": start, "end": end}, word_ids)
    raise ValueError(f"unknown task {task!r}; the tasks are {TASKS}")


def collate(features: Sequence[Features], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pad a list of features into tensors: input_ids, token_type_ids, attention_mask and the targets
    (labels [B] or [B, T], or start_positions/end_positions [B])."""
    T = max(len(f.input_ids) for f in features)
    batch = {
        "input_ids": torch.tensor([f.input_ids + [pad_id] * (T - len(f.input_ids)) for f in features]),
        "token_type_ids": torch.tensor([f.token_type_ids + [0] * (T - len(f.input_ids)) for f in features]),
        "attention_mask": torch.tensor([[1] * len(f.input_ids) + [0] * (T - len(f.input_ids)) for f in features]),
    }
    target = features[0].target
    if "label" in target:
        batch["labels"] = torch.tensor([f.target["label"] for f in features])
    elif "labels" in target:
        batch["labels"] = torch.tensor([f.target["labels"] + [-100] * (T - len(f.input_ids)) for f in features])
    else:
        batch["start_positions"] = torch.tensor([f.target["start"] for f in features])
        batch["end_positions"] = torch.tensor([f.target["end"] for f in features])
    return batch


def task_loader(
    task: str,
    tokenizer: WordPieceTokenizer,
    n: int,
    split: str = "train",
    batch_size: int = 32,
    seed: int = 0,
    shuffle: bool = True,
    max_length: int = 128,
    label_all_pieces: bool = False,
) -> DataLoader:
    """A DataLoader of padded batches of ``n`` toy-world examples of ``task`` (e.g. sentiment for the graded
    fine-tuning cell); shuffled with ``seed``."""
    feats = [encode(task, tokenizer, x, max_length, label_all_pieces) for x in examples(task, n, split, seed)]
    return DataLoader(
        feats, batch_size, shuffle=shuffle, collate_fn=lambda fs: collate(fs, tokenizer.pad_id),
        generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip


def task_loss(task: str, outputs, batch: dict) -> torch.Tensor:
    if task == "qa":
        return span_loss(*outputs, batch["start_positions"], batch["end_positions"])
    if task == "pos":
        return tagging_loss(outputs, batch["labels"])
    return F.cross_entropy(outputs, batch["labels"])


# --- metrics ------------------------------------------------------------------------------------------------------


def accuracy(predictions: Sequence, golds: Sequence) -> float:
    return sum(p == g for p, g in zip(predictions, golds)) / len(golds)


def macro_f1(predictions: Sequence[int], golds: Sequence[int], num_labels: int) -> float:
    """The mean over labels of each label's F1 (a label never predicted nor gold counts 0)."""
    scores = []
    for c in range(num_labels):
        tp = sum(p == c and g == c for p, g in zip(predictions, golds))
        fp = sum(p == c and g != c for p, g in zip(predictions, golds))
        fn = sum(p != c and g == c for p, g in zip(predictions, golds))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / num_labels


def span_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD's F1: overlap of the predicted and gold answers as bags of words."""
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def qa_scores(predicted: Sequence[tuple[str, ...]], gold: Sequence[tuple[str, ...]]) -> dict[str, float]:
    return {
        "exact_match": accuracy([tuple(p) for p in predicted], [tuple(g) for g in gold]),
        "span_f1": sum(span_f1(p, g) for p, g in zip(predicted, gold)) / len(gold),
    }


# --- training and evaluation ------------------------------------------------------------------------------------


@dataclass
class FinetuneConfig:
    n_train: int = 400
    n_test: int = 200
    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-3  # full fine-tuning of the small course BERT; the frozen variant uses `feature_lr`
    dropout: float = 0.1  # in the encoder while fine-tuning, as in the paper (the heads have their own)
    feature_lr: float = 3e-3
    warmup_fraction: float = 0.1
    feature_based: bool = False
    label_all_pieces: bool = False
    max_length: int = 128
    max_answer_len: int = 4
    test_split: str = "heldout"  # "heldout" templates, or "unseen" examples of the training templates


@dataclass
class FinetuneResult:
    task: str
    metrics: dict[str, float]
    losses: list[float]
    examples: list  # the held-out examples
    predictions: list  # one per example: a label, a list of tags, or the answer's words
    model: FineTuner | None = None

    def errors(self, k: int = 5) -> list[tuple]:
        """Up to ``k`` (example, prediction) pairs the model got wrong."""
        out = []
        for x, p in zip(self.examples, self.predictions):
            if p != gold(self.task, x):
                out.append((x, p))
        return out[:k]


def gold(task: str, example):
    """The answer the metric compares a prediction with."""
    if task in ("sentiment", "nli"):
        return example.label
    if task == "pos":
        return list(example.tags)
    return tuple(example.answer)


@torch.no_grad()
def predict(
    task: str, model: FineTuner, tokenizer: WordPieceTokenizer, batch_examples: Sequence, config: FinetuneConfig,
    batch_size: int = 64,
) -> list:
    """Predictions for ``batch_examples``: labels, tag lists (from each word's first piece), or answer words."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for i in range(0, len(batch_examples), batch_size):
        chunk = batch_examples[i : i + batch_size]
        feats = [encode(task, tokenizer, x, config.max_length, config.label_all_pieces) for x in chunk]
        batch = to_device(collate(feats, tokenizer.pad_id), device)
        outputs = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        if task in ("sentiment", "nli"):
            out += outputs.argmax(-1).tolist()
        elif task == "pos":
            tags = outputs.argmax(-1).tolist()
            for f, row in zip(feats, tags):
                firsts = {}
                for pos, w in enumerate(f.word_ids):
                    if w is not None and w not in firsts:
                        firsts[w] = POS_TAGS[row[pos]]
                out.append([firsts[w] for w in sorted(firsts)])
        else:
            for f, x, s_logits, e_logits in zip(feats, chunk, *outputs):
                T = len(f.input_ids)
                context = torch.tensor([w is not None for w in f.word_ids], device=device)
                s, e = best_span(s_logits[:T], e_logits[:T], context, config.max_answer_len)
                out.append(tuple(x.passage[f.word_ids[s] : f.word_ids[e] + 1]))
    return out


def score(task: str, predictions: Sequence, test: Sequence) -> dict[str, float]:
    """The task's metrics: accuracy and macro-F1; token accuracy; exact match and span F1."""
    golds = [gold(task, x) for x in test]
    if task in ("sentiment", "nli"):
        return {"accuracy": accuracy(predictions, golds), "macro_f1": macro_f1(predictions, golds, NUM_LABELS[task])}
    if task == "pos":
        pairs = [(p, g) for ps, gs in zip(predictions, golds) for p, g in zip(ps, gs)]
        return {"token_accuracy": sum(p == g for p, g in pairs) / len(pairs)}
    return qa_scores(predictions, golds)


def finetune(
    task: str,
    encoder: Bert,
    config: FinetuneConfig | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    keep_model: bool = False,
) -> FinetuneResult:
    """Fine-tune a copy of ``encoder`` (or, feature-based, train a head on it frozen) on ``config.n_train``
    training-template examples of ``task``; score on ``config.n_test`` held-out-template examples."""
    config = config or FinetuneConfig()
    device = resolve(device)
    tokenizer = encoder.tokenizer
    torch.manual_seed(seed)
    enc = copy.deepcopy(encoder)
    set_dropout(enc, config.dropout)
    model = FineTuner(enc, make_head(task, enc), config.feature_based).to(device)
    loader = task_loader(task, tokenizer, config.n_train, "train", config.batch_size, seed,
                         max_length=config.max_length, label_all_pieces=config.label_all_pieces)
    lr = config.feature_lr if config.feature_based else config.lr
    train_config = TrainConfig(steps=config.steps, lr=lr, warmup_steps=max(1, int(config.warmup_fraction * config.steps)),
                               schedule="linear")

    def loss_fn(m: FineTuner, batch: dict) -> torch.Tensor:
        return task_loss(task, m(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"]), batch)

    losses = train(model, loader, loss_fn, train_config, device, desc=f"fine-tuning ({task})")
    return replace(evaluate(task, model, tokenizer, config, seed), losses=losses, model=model if keep_model else None)


def evaluate(task: str, model: FineTuner, tokenizer: WordPieceTokenizer, config: FinetuneConfig,
             seed: int = 0) -> FinetuneResult:
    """Score a fine-tuned ``model`` on ``config.n_test`` examples of ``config.test_split`` (e.g. one model on
    another held-out split than the one it was scored on)."""
    test = examples(task, config.n_test, config.test_split, seed)
    predictions = predict(task, model, tokenizer, test, config)
    return FinetuneResult(task, score(task, predictions, test), [], test, predictions, model)


# --- baselines ----------------------------------------------------------------------------------------------------


def _bag_of_words(token_lists: Sequence[Sequence[str]], vocab: dict[str, int]) -> torch.Tensor:
    x = torch.zeros(len(token_lists), len(vocab))
    for row, tokens in enumerate(token_lists):
        for t in tokens:
            if t in vocab:
                x[row, vocab[t]] += 1
    return x


def baseline(task: str, n_train: int = 400, n_test: int = 200, seed: int = 0,
             test_split: str = "heldout") -> dict[str, float]:
    """A model without pre-training, scored like ``finetune``:

    * sentiment, NLI: logistic regression on bags of words (NLI: the premise's and the hypothesis's, side by side);
    * POS: each word's most frequent tag in training (unseen words: the most frequent tag overall);
    * QA: the passage sentence sharing most words with the question; its last word before the full stop.
    """
    train_x, test_x = examples(task, n_train, "train", seed), examples(task, n_test, test_split, seed)
    if task in ("sentiment", "nli"):
        parts = (lambda x: [x.tokens]) if task == "sentiment" else (lambda x: [x.premise, x.hypothesis])
        vocab = {w: i for i, w in enumerate(sorted({w for x in train_x for p in parts(x) for w in p}))}

        def features(xs):
            return torch.cat([_bag_of_words([parts(x)[k] for x in xs], vocab) for k in range(len(parts(xs[0])))], 1)

        acc = linear_probe_accuracy(features(train_x), torch.tensor([x.label for x in train_x]), features(test_x),
                                    torch.tensor([x.label for x in test_x]), NUM_LABELS[task], seed=seed)
        return {"accuracy": acc}
    if task == "pos":
        counts: dict[str, Counter] = {}
        for s in train_x:
            for w, t in zip(s.tokens, s.tags):
                counts.setdefault(w, Counter())[t] += 1
        overall = Counter(t for s in train_x for t in s.tags).most_common(1)[0][0]
        predictions = [[counts[w].most_common(1)[0][0] if w in counts else overall for w in s.tokens] for s in test_x]
        return score(task, predictions, test_x)
    return score(task, [_overlap_answer(x) for x in test_x], test_x)


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


# --- repeated runs and learning curves ---------------------------------------------------------------------------


def run_seeds(task: str, encoder: Bert, config: FinetuneConfig | None = None, seeds: Sequence[int] = (0, 1, 2),
              device: str | torch.device | None = None, keep_model: bool = False) -> list[FinetuneResult]:
    """One fine-tuning run per seed (the seed picks the data, the head's initialisation and the batches)."""
    return [finetune(task, encoder, config, seed, device, keep_model) for seed in seeds]


def results_table(rows: Sequence[tuple[str, str, dict[str, tuple[float, float]]]]) -> str:
    """A Markdown table of ``(task, model, summarize(...))`` rows, one line per metric."""
    lines = ["| task | model | metric | mean ± std |", "|---|---|---|---|"]
    for task, model, summary in rows:
        lines += [f"| {task} | {model} | {metric} | {mean:.3f} ± {std:.3f} |" for metric, (mean, std) in summary.items()]
    return "\n".join(lines)


def summarize(metrics: Sequence[dict[str, float]]) -> dict[str, tuple[float, float]]:
    """Each metric's (mean, standard deviation) over runs."""
    out = {}
    for k in metrics[0]:
        t = torch.tensor([m[k] for m in metrics], dtype=torch.float64)
        out[k] = (t.mean().item(), t.std(unbiased=False).item())
    return out


def learning_curve(task: str, encoder: Bert, sizes: Sequence[int], config: FinetuneConfig | None = None,
                   seed: int = 0, device: str | torch.device | None = None,
                   done: dict[int, float] | None = None) -> dict[str, list[float]]:
    """The task's main metric for fine-tuned BERT and for the baseline, trained on each of ``sizes`` examples.
    ``done`` maps sizes already fine-tuned with this config and seed (e.g. a run made earlier) to their score, which
    is reused instead of training again."""
    config, done = config or FinetuneConfig(), dict(done or {})
    metric = METRICS[task]
    curve: dict[str, list[float]] = {"n_train": list(sizes), "BERT": [], "baseline": []}
    for n in sizes:
        if n not in done:
            done[n] = finetune(task, encoder, replace(config, n_train=n), seed, device).metrics[metric]
        curve["BERT"].append(done[n])
        curve["baseline"].append(baseline(task, n, config.n_test, seed, config.test_split)[metric])
    return curve


def plot_learning_curve(curve: dict[str, list[float]], task: str, metric: str, ax=None):
    """Plot a ``learning_curve``: fine-tuned BERT and the baseline against the number of training examples."""
    import matplotlib.pyplot as plt  # only the book's pages plot

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ax.plot(curve["n_train"], curve["BERT"], marker="o", label="fine-tuned BERT")
    ax.plot(curve["n_train"], curve["baseline"], marker="s", label="baseline")
    ax.set(xscale="log", xlabel="training examples", ylabel=f"{metric}, held-out templates",
           title=f"Learning curve: {task}", ylim=(0, 1.02))
    ax.set_xticks(curve["n_train"], [str(n) for n in curve["n_train"]])
    ax.minorticks_off()
    ax.legend()
    return ax
