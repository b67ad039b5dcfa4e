"""The scores fine-tuning reports: accuracy and macro-F1 for labels, SQuAD's exact match and span F1 for answers,
and a mean ± standard deviation over runs (seeds); two measures of generated text, distinct-n and repetition; and a
linear probe's test accuracy on frozen features (the probes' and the tagging task's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch
import torch.nn.functional as F


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


def ngrams(text: Sequence, n: int) -> list[tuple]:
    return [tuple(text[i : i + n]) for i in range(len(text) - n + 1)]


def distinct_n(texts: Sequence[Sequence], n: int) -> float:
    """Distinct-n (Li et al. 2016): the share of all the texts' n-grams that are different from each other."""
    grams = [g for t in texts for g in ngrams(t, n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def repetition(text: Sequence, n: int = 4) -> float:
    """seq-rep-n (Welleck et al. 2020): the share of a text's n-grams that repeat an earlier one in the same text."""
    return 1 - distinct_n([text], n) if len(text) >= n else 0.0


def summarize(metrics: Sequence[dict[str, float]]) -> dict[str, tuple[float, float]]:
    """Each metric's (mean, standard deviation) over runs."""
    out = {}
    for k in metrics[0]:
        t = torch.tensor([m[k] for m in metrics], dtype=torch.float64)
        out[k] = (t.mean().item(), t.std(unbiased=False).item())
    return out


def linear_probe_accuracy(
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    test_x: torch.Tensor,
    test_y: torch.Tensor,
    num_classes: int,
    epochs: int = 200,
    weight_decay: float = 1e-4,
    seed: int = 0,
) -> float:
    """Train a multinomial logistic regression (full batch, L-BFGS) on standardised features; test accuracy."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
    torch.manual_seed(seed)
    probe = torch.nn.Linear(train_x.shape[1], num_classes)
    opt = torch.optim.LBFGS(probe.parameters(), max_iter=epochs, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(probe(train_x), train_y) + weight_decay * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return (probe(test_x).argmax(-1) == test_y).float().mean().item()
