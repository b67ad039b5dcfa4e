"""What chapter 5 shows of fine-tuning runs: a Markdown table of mean ± std, and a learning curve."""

from __future__ import annotations

from collections.abc import Sequence


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
