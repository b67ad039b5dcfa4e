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
# smallest label, 12 points, is 17 px high. A wide screen shows it at that size; a phone shrinks it to the text
# column (about 350 px at 400 px), and its labels to 11.5 px, the smallest a phone's reader should be asked to read
# (tests/test_browser.py checks every chart of the built book). The book draws every figure at twice that resolution
# (book/_ext/w2b_sphinx.py), so that shrunk or on a sharp screen its labels stay crisp. Pages keep to 5 inches, lay
# several panels out in rows rather than side by side, and break a long title in two.
BOOK_STYLE = {
    "figure.figsize": (5.0, 3.4),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 12,
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


def word_cosines(model: Embedder, word: str, sentences: Sequence[str]) -> torch.Tensor:
    """The cosine similarity of ``word``'s vectors in every two of ``sentences``, per layer:
    [num_layers + 1, len(sentences), len(sentences)]. A static vector gives 1 everywhere."""
    unit = F.normalize(word_vectors(model, word, sentences), dim=-1)
    return unit @ unit.transpose(1, 2)


def sense_margins(cosines: torch.Tensor, senses: Sequence[str]) -> torch.Tensor:
    """Per layer, the lowest cosine of a pair of sentences that share a sense minus the highest of a pair that does
    not (``cosines`` as ``word_cosines`` gives them, a sense per sentence). Above 0, every same-sense pair is closer
    than every pair of different senses: the layer's vectors follow the senses on these sentences. A static vector
    gives 0: every pair is as close as every other."""
    if len(senses) != cosines.shape[-1] or len(set(senses)) not in range(2, len(senses)):
        raise ValueError("senses: a label per sentence, with a pair that shares a sense and a pair that does not")
    pairs = [(i, j) for i in range(len(senses)) for j in range(i + 1, len(senses))]
    by_pair = torch.stack([cosines[:, i, j] for i, j in pairs], dim=1)  # [layer, pair]
    same = torch.tensor([senses[i] == senses[j] for i, j in pairs])
    return by_pair[:, same].min(1).values - by_pair[:, ~same].max(1).values


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def cosine_table(model: Embedder, word: str, sentences: Sequence[str], senses: Sequence[str] | None = None) -> str:
    """Markdown: the sentences, lettered A, B, C, ..., then a table of the cosine similarity of ``word``'s vectors in
    every two of them, a row per layer (narrow enough for a phone). A static vector gives 1.000 everywhere; a
    contextual one, less where the senses differ.

    With ``senses`` (a label per sentence) each column says whether its pair shares a sense, and a line under the
    table says in which layers the cosine follows the senses: every same-sense pair closer than every pair of
    different senses (``sense_margins`` above 0). Layer 0 never counts: it has read no context, and where it differs
    between sentences (a transformer's, which adds the word's position) it can order the pairs by position alone; the
    line says so when it does. A few sentences are a few draws, so that line is an observation, not a score."""
    labelled = senses is not None
    cosines = word_cosines(model, word, sentences)  # [layer, sentence, sentence]
    margins = sense_margins(cosines, senses) if labelled else None
    letters = _letters(len(sentences))
    pairs = [(i, j) for i in range(len(sentences)) for j in range(i + 1, len(sentences))]
    sense = [f" ({senses[i]})" if labelled else "" for i in range(len(sentences))]
    listed = [f"- **{letters[i]}**{sense[i]}: {text}" for i, text in enumerate(sentences)]

    def column(i: int, j: int) -> str:
        if not labelled:
            return f"{letters[i]} and {letters[j]}"
        return f"{letters[i]} and {letters[j]}: " + ("same sense" if senses[i] == senses[j] else "senses differ")

    lines = ["| layer | " + " | ".join(column(i, j) for i, j in pairs) + " |", "|---|" + "---|" * len(pairs)]
    for k in range(cosines.shape[0]):
        lines.append(f"| {k} | " + " | ".join(f"{float(cosines[k, i, j]):.3f}" for i, j in pairs) + " |")
    table = "\n".join(listed) + "\n\n" + "\n".join(lines)
    if not labelled:
        return table
    layers = range(cosines.shape[0])
    ordered = [k for k in layers if margins[k] > 0]
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
    return table + f"\n\n*{word}*: {reading}"


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


def plot_layer_scores(
    results: dict[str, ProbeResult],
    ax,
    chance: float | None = 0.5,
    ylabel: str = "sense accuracy",
    legend: bool = True,
):
    """A probe's score per layer, a line per model (its spread over seeds or halvings as error bars), chance as a
    dotted line, layers as whole numbers. A static model has one layer, 0: a single point, drawn as an open square
    over the others (a second static model's inside the first's). Without ``legend``, a figure legend can gather
    several panels' (``fig.legend``, with ``ax.get_legend_handles_labels()``). Returns the legend's handles: the
    models in their order, then chance."""
    from matplotlib.ticker import MaxNLocator

    handles, static = [], 0
    for k, (name, r) in enumerate(results.items()):
        style = {"marker": "o", "capsize": 3, "color": f"C{k}"}
        if len(r.mean) == 1:  # a static model's one point: an open square over the others, each next one smaller
            style |= {"marker": "s", "markersize": 14 - 5 * static, "mfc": "none", "mew": 2, "zorder": 4 + static}
            static += 1
        handles.append(ax.errorbar(range(len(r.mean)), r.mean, yerr=r.std, label=name, **style))
    if chance is not None:
        handles.append(ax.axhline(chance, color="gray", linestyle=":", label="chance"))
    low = min(min(r.mean) - max(r.std) for r in results.values())
    ax.set(xlabel="layer (0 = before any context)", ylabel=ylabel, ylim=(min(0.4, low - 0.03), 1.03))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if legend:
        ax.legend(handles=handles)  # where no line runs
    return handles


def sense_margin_table(
    models: dict[str, Embedder], sentences: dict[str, dict[str, str]]
) -> dict[str, dict[str, torch.Tensor]]:
    """``sense_margins`` of every model (name -> model) for every word of ``sentences`` (``{word: {sentence:
    sense}}``, as ``SEED_SENTENCES``): model -> word -> a margin per layer."""
    return {
        name: {word: sense_margins(word_cosines(m, word, list(s)), list(s.values())) for word, s in sentences.items()}
        for name, m in models.items()
    }


def plot_sense_margins(margins: dict[str, dict[str, torch.Tensor]], title: str | None = None):
    """A panel per model, one above the other (a model added to ``margins`` adds a row), a colour per word:
    ``sense_margin_table``'s margins per layer as stems from 0 to a dot. A dot above 0: every same-sense pair is the
    closer; at 0, every pair alike (one static vector); below, a pair of different senses is the closer. Returns the
    figure, 5 inches wide as the book's figures are."""
    import matplotlib.pyplot as plt

    depth = {name: max(len(m) for m in by_word.values()) for name, by_word in margins.items()}
    fig, axes = plt.subplots(len(margins), 1, figsize=(5.0, 2.0 * len(margins) + 0.8), sharey=True, squeeze=False)
    values = torch.cat([m for by_word in margins.values() for m in by_word.values()])
    top = max(0.05, float(values.abs().max())) * 1.15
    for ax, (name, by_word) in zip(axes[:, 0], margins.items()):
        width = 0.7 / len(by_word)
        for k, (word, m) in enumerate(by_word.items()):
            x = [layer + (k - (len(by_word) - 1) / 2) * width for layer in range(len(m))]
            colour = f"C{k}"
            ax.vlines(x, 0, m, color=colour, linewidth=2.5)
            ax.plot(x, m, "o", color=colour, markersize=7, label=f"'{word}'")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set(title=name, ylabel="same sense minus\nclosest other", xlim=(-0.6, max(depth.values()) - 0.4))
        ax.set(ylim=(-top, top))
        ax.set_xticks(range(depth[name]))
    axes[-1, 0].set_xlabel("layer")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=len(margins[name]))
    if title:
        fig.suptitle(title)
    return fig


def plot_thesis(
    models: dict[str, Embedder], word: str, sentences: dict[str, str], layers: dict[str, int] | None = None
):
    """The course's thesis in one figure: ``word`` in a few sentences (``{sentence: sense}``, the first two of
    different senses), a row per model (name -> model), each model's vectors at its layer in ``layers`` (default:
    its last). Left, the word's vectors in the first two sentences, drawn at the angle between them: a static vector
    is one arrow, a contextual model gives two. Right, the cosine of every two sentences' vectors, with the cells of
    a pair that shares a sense outlined. Add a model to ``models`` and it gets a row of its own. Returns the figure,
    5 inches wide as the book's figures are."""
    import math

    import matplotlib.pyplot as plt
    from matplotlib.patches import Arc, Rectangle

    texts, senses = list(sentences), list(sentences.values())
    if senses[0] == senses[1]:
        raise ValueError("sentences: the first two must use two different senses")
    letters = _letters(len(texts))
    grids = {}
    for name, model in models.items():
        cosines = word_cosines(model, word, texts)
        layer = (layers or {}).get(name, cosines.shape[0] - 1)
        grids[name] = (layer, cosines.shape[0] == 1, cosines[layer])
    vmin = min(0.5, math.floor(min(float(c.min()) for _, _, c in grids.values()) * 10) / 10)
    fig, axes = plt.subplots(len(models), 2, figsize=(5.0, 2.4 * len(models) + 1.3), squeeze=False)
    for (arrows, grid), (name, (layer, static, cos)) in zip(axes, grids.items()):
        cosine = float(cos[0, 1].clamp(-1.0, 1.0))
        angle = math.degrees(math.acos(cosine))
        one = angle < 2.0  # a static vector: the same arrow twice
        for k, side in ((0, 1), (1, -1))[: 1 if one else 2]:
            a = math.radians(90 + side * angle / 2)
            tip = (math.cos(a), math.sin(a))
            colour = "black" if one else f"C{k}"
            arrows.annotate(
                "",
                xy=tip,
                xytext=(0, 0),
                arrowprops={"arrowstyle": "-|>", "lw": 2.5, "color": colour, "mutation_scale": 18},
            )
            label = "A = B" if one else letters[k]
            arrows.text(tip[0] * 1.2, tip[1] * 1.12, label, ha="center", va="center", fontsize=13, color=colour)
        if not one:
            arrows.add_patch(Arc((0, 0), 0.7, 0.7, theta1=90 - angle / 2, theta2=90 + angle / 2, color="gray"))
        caption = "one vector" if static else f"layer {layer}"
        arrows.set_title(f"{name}\n{caption}", fontsize=11)
        arrows.text(0, -0.3, f"A, B: cosine {cosine:.2f}", ha="center", fontsize=11)
        arrows.set(xlim=(-1.3, 1.3), ylim=(-0.45, 1.4), aspect="equal")
        arrows.axis("off")
        grid.imshow(cos, vmin=vmin, vmax=1.0, cmap="viridis")
        for i in range(len(texts)):
            for j in range(len(texts)):
                value = float(cos[i, j])
                grid.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=11,
                    color="black" if value > (vmin + 1) / 2 else "white",
                )
                if i != j and senses[i] == senses[j]:
                    grid.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="tab:red", linewidth=3))
        grid.set_xticks(range(len(texts)), letters)
        grid.set_yticks(range(len(texts)), letters)
        grid.xaxis.tick_top()
    listed = "\n".join(f"{letter} ({sense}): {text}" for letter, sense, text in zip(letters, senses, texts))
    fig.suptitle(f"'{word}' in {len(texts)} sentences; red: a pair with one sense\n{listed}", fontsize=11)
    return fig


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
