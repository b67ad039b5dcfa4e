"""What the book's pages show: a word's vectors across sentences (a cosine table per layer, and occurrences of
many sentences projected to 2-D by sense), probes' scores per layer in one table, and chapter 5's fine-tuning runs (a
table of mean ± std, and a learning curve). Also the pieces every page shares: the figures' style, numbers glued into
the prose, a model card shown inside a page, and the course's four models loaded side by side (``course_models``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from .data import SenseOccurrence, pretraining_documents
from .embedding import Embedder, word_vectors
from .probes import ProbeResult, embed_occurrences

# The book's figures, for ``plt.style.use(BOOK_STYLE)``. A figure of 5 inches at 100 dpi is 500 px wide, and its
# smallest label, 11 points, is 15 px high. A wide screen shows it at that size; a phone shrinks it to the text
# column, and at 400 px its labels are still 12 px high, 9 points. The book draws every figure at twice that
# resolution (book/_ext/w2b_sphinx.py), so that shrunk or on a sharp screen its labels stay crisp. Pages keep to 5
# inches and lay several panels out in rows rather than side by side.
BOOK_STYLE = {
    "figure.figsize": (5.0, 3.4),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "figure.titlesize": 12,
}


def glue(name: str, value: Any) -> None:
    """Make ``value`` available to the page's prose as ``{glue:text}`name``` or ``{glue:text}`name:.3f``` (myst-nb),
    so that a number in the text is the one this build computed. A tensor or NumPy number is glued as a Python one,
    which the format spec can read. Outside the book's build, where myst-nb may be missing, nothing is shown."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value.item() if hasattr(value, "item") else value, display=False)


def model_card(checkpoint: str | Path) -> str:
    """The model card next to ``checkpoint`` (``NAME.md``) as Markdown to show inside a page: without its title, and
    with its sections as bold lines, so that they neither enter the page's table of contents nor end a folded
    output."""
    card = Path(checkpoint).with_suffix(".md").read_text(encoding="utf-8")
    card = re.sub(r"\A# .*\n+", "", card)
    return re.sub(r"^#+ (.*)$", r"**\1**", card, flags=re.M)


def cosine_table(model: Embedder, word: str, sentences: Sequence[str], senses: Sequence[str] | None = None) -> str:
    """A Markdown table: for each pair of sentences, the cosine similarity of ``word``'s vectors in them, one
    column per layer. A static vector gives 1.000 everywhere; a contextual one, less where the senses differ.

    With ``senses`` (a label per sentence) each row says whether its pair shares a sense, and a line under the
    table says in which layers the cosine follows the senses: every same-sense pair closer than every pair of
    different senses. Layer 0 never counts: it has read no context, and where it differs between sentences (a
    transformer's, which adds the word's position) it can order the pairs by position alone; the line says so when it
    does. A few sentences are a few draws, so that line is an observation, not a score."""
    labelled = senses is not None
    if labelled and (len(senses) != len(sentences) or len(set(senses)) not in range(2, len(senses))):
        raise ValueError("senses: a label per sentence, with a pair that shares a sense and a pair that does not")
    unit = F.normalize(word_vectors(model, word, sentences), dim=-1)
    cosines = unit @ unit.transpose(1, 2)  # [layer, sentence, sentence]
    layers = range(cosines.shape[0])
    pairs = [(i, j) for i in range(len(sentences)) for j in range(i + 1, len(sentences))]
    same = [labelled and senses[i] == senses[j] for i, j in pairs]
    head = ["sentence", "other sentence", *(["same sense?"] * labelled), *(f"layer {k}" for k in layers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (i, j), shared in zip(pairs, same):
        cells = [sentences[i], sentences[j], *([("yes" if shared else "no")] * labelled)]
        lines.append("| " + " | ".join(cells + [f"{float(cosines[k, i, j]):.3f}" for k in layers]) + " |")
    if not labelled:
        return "\n".join(lines)
    by_pair = torch.stack([cosines[:, i, j] for i, j in pairs], dim=1)  # [layer, pair]
    same = torch.tensor(same)
    ordered = [k for k in layers if by_pair[k, same].min() > by_pair[k, ~same].max()]
    follows, others = [k for k in ordered if k > 0], [k for k in layers if k > 0 and k not in ordered]
    if follows and not others:
        reading = "in every layer above layer 0, each same-sense pair is closer than each pair of different senses."
    elif not follows:
        reading = "in no layer is each same-sense pair closer than each pair of different senses."
    else:
        reading = (
            f"each same-sense pair is closer than each pair of different senses in {_layers(follows)}, "
            f"not in {_layers(others)}."
        )
    if 0 in ordered:
        reading += " (Layer 0 orders them too, but it has read no context, only where the word stands: not counted.)"
    return "\n".join(lines) + f"\n\n*{word}*: {reading}"


def _layers(ks: Sequence[int]) -> str:
    """[2] -> 'layer 2'; [0, 1, 3] -> 'layers 0, 1 and 3'."""
    if len(ks) == 1:
        return f"layer {ks[0]}"
    return "layers " + ", ".join(map(str, ks[:-1])) + f" and {ks[-1]}"


def per_layer_table(results: dict[tuple[str, str], ProbeResult]) -> str:
    """A Markdown table of per-layer scores, a row per ``(model, test)``: mean ± std over a probe's seeds (the mean
    alone where it has one score per layer, as leave-one-out has), "—" where a model has fewer layers."""
    depth = max(len(r.mean) for r in results.values())
    lines = ["| model | test | " + " | ".join(f"layer {i}" for i in range(depth)) + " |", "|---|---|" + "---|" * depth]
    for (model, test), r in results.items():
        spread = r.scores.shape[0] > 1
        cells = [f"{m:.3f} ± {s:.3f}" if spread else f"{m:.3f}" for m, s in zip(r.mean, r.std)]
        lines.append(f"| {model} | {test} | " + " | ".join(cells + ["—"] * (depth - len(cells))) + " |")
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
        ax.legend(fontsize=9)
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
        _, ax = plt.subplots()  # the page's style sets the size (BOOK_STYLE)
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


def course_models(device=None, word2vec_tokens: int = 120_000) -> dict[str, Embedder]:
    """The four models of the course, ready for side-by-side probes: a word2vec trained here on ``word2vec_tokens``
    tokens of the checkpoints' mixture, half toy world and half ordinary English (a few seconds once the English
    corpus is read), and the committed ELMo, GPT and BERT checkpoints."""
    from . import bert, elmo, gpt
    from .word2vec import Word2Vec

    documents = pretraining_documents(word2vec_tokens, wordnet_fraction=0.0, english_fraction=0.5)
    corpus = [sentence for document in documents for sentence in document]
    return {
        "word2vec": Word2Vec(
            corpus, vector_size=64, window=5, min_count=2, epochs=2, seed=0, device=device, progress=False
        ),
        "ELMo": elmo.pretrained(device),
        "GPT": gpt.pretrained(device),
        "BERT": bert.pretrained(device=device),
    }
