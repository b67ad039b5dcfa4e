"""What the book's pages show: a word's vectors across sentences (a cosine table per layer, and occurrences of
many sentences projected to 2-D by sense), and chapter 5's fine-tuning runs (a table of mean ± std, and a learning
curve)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .data import SenseOccurrence
from .embedding import Embedder, word_vectors
from .probes import embed_occurrences


def cosine_table(model: Embedder, word: str, sentences: Sequence[str]) -> str:
    """A Markdown table: for each pair of sentences, the cosine similarity of ``word``'s vectors in them, one
    column per layer. A static vector gives 1.000 everywhere; a contextual one, less where the senses differ."""
    unit = F.normalize(word_vectors(model, word, sentences), dim=-1)
    layers = range(unit.shape[0])
    lines = [
        "| sentence | other sentence | " + " | ".join(f"layer {i}" for i in layers) + " |",
        "|---|---|" + "---|" * len(layers),
    ]
    for i in range(len(sentences)):
        for j in range(i + 1, len(sentences)):
            cells = " | ".join(f"{float(unit[layer, i] @ unit[layer, j]):.3f}" for layer in layers)
            lines.append(f"| {sentences[i]} | {sentences[j]} | {cells} |")
    return "\n".join(lines)


def plot_senses(model: Embedder, occurrences: Sequence[SenseOccurrence], words: Sequence[str], layer: int, axes):
    """For each word, its occurrences' vectors in ``layer`` projected onto their two principal components, one
    colour per gold sense: do the senses fall apart?"""
    occurrences = [o for o in occurrences if o.word in words]
    vectors = embed_occurrences(model, occurrences)[layer]
    for ax, word in zip(axes, words):
        rows = [i for i, o in enumerate(occurrences) if o.word == word]
        x = vectors[rows] - vectors[rows].mean(0)
        xy = x @ torch.linalg.svd(x, full_matrices=False).Vh[:2].T
        for sense in sorted({occurrences[i].sense for i in rows}):
            keep = [k for k, i in enumerate(rows) if occurrences[i].sense == sense]
            ax.scatter(xy[keep, 0], xy[keep, 1], label=sense.split(".", 1)[1])
        ax.set(title=f"'{word}', layer {layer}", xlabel="principal component 1", ylabel="principal component 2")
        ax.legend(fontsize=7)
    return axes


def results_table(rows: Sequence[tuple[str, str, dict[str, tuple[float, float]]]]) -> str:
    """A Markdown table of ``(task, model, metrics.summarize(...))`` rows, one line per metric."""
    lines = ["| task | model | metric | mean ± std |", "|---|---|---|---|"]
    for task, model, summary in rows:
        lines += [
            f"| {task} | {model} | {metric} | {mean:.3f} ± {std:.3f} |" for metric, (mean, std) in summary.items()
        ]
    return "\n".join(lines)


def plot_learning_curve(curve: dict[str, list[float]], task: str, metric: str, ax=None):
    """Plot a ``finetune.learning_curve``: fine-tuned BERT and the baseline against the number of training examples."""
    import matplotlib.pyplot as plt  # only the book's pages plot

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    ax.plot(curve["n_train"], curve["BERT"], marker="o", label="fine-tuned BERT")
    ax.plot(curve["n_train"], curve["baseline"], marker="s", label="baseline")
    ax.set(
        xscale="log",
        xlabel="training examples",
        ylabel=f"{metric}, held-out templates",
        title=f"Learning curve: {task}",
        ylim=(0, 1.02),
    )
    ax.set_xticks(curve["n_train"], [str(n) for n in curve["n_train"]])
    ax.minorticks_off()
    ax.legend()
    return ax
