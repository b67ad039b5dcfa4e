"""The book's diagrams, drawn by code so that they stay in sync with the library they describe.

Run ``python book/_diagrams/draw.py`` to write every diagram to ``book/images/diagrams/`` (or
``python book/_diagrams/draw.py OUT_DIR`` to write them elsewhere). The output is byte-stable: a fixed
``svg.hashsalt``, no date in the metadata, glyphs drawn as paths from the font that matplotlib ships
(DejaVu Sans). ``tests/test_diagrams.py`` redraws them into a temporary folder and compares.

Every diagram is a function named after its file; ``DIAGRAMS`` lists them. Coordinates are in units of
1/SCALE inch, with the origin at the bottom left; text keeps its size in points, so SCALE sets how large the
text is against the drawing (the book shows a diagram about 6 inches wide).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

OUT_DIR = Path(__file__).resolve().parents[1] / "images" / "diagrams"
# How long each notebook of the book took to execute in a build, in seconds: tools/chapter_times.py writes it from
# the build's jupyter-cache; the course map and the landing page's table give the chapters' sums.
CHAPTER_TIMES = Path(__file__).with_name("chapter_times.json")
RC = {
    "svg.hashsalt": "word2bert-diagrams",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "font.size": 10,
    "path.simplify": False,
}
METADATA = {"Date": None, "Creator": "book/_diagrams/draw.py (matplotlib)"}

# One colour per kind of thing, the same in every diagram.
EMBED = "#dbe9f6"  # embeddings, input vectors
ATTN = "#fde2c4"  # attention
FFN = "#d9f0d3"  # feed-forward networks, gates
NORM = "#e6e6e6"  # LayerNorm, plumbing
OUT = "#f6d5d5"  # outputs, losses
HIGHLIGHT = "#ffe699"  # the item the diagram is about
NOISE = "#e4d7f5"  # noise words, random draws
LINE = "#333333"
MUTED = "#777777"
HEADS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"]  # one colour per attention head

SCALE = 13  # units per inch


def canvas(width: float, height: float, title: str):
    """A blank figure of ``width`` x ``height`` units with ``title`` along its top edge."""
    fig = plt.figure(figsize=(width / SCALE, height / SCALE), facecolor="white")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    ax.text(width / 2, height - 2.2, title, ha="center", va="center", fontsize=11.5, weight="bold")
    return fig, ax


def box(
    ax,
    x,
    y,
    w,
    h,
    text="",
    fc="white",
    ec=LINE,
    size=10,
    round_=True,
    lw=1.0,
    color="black",
    weight="normal",
    style="normal",
):
    """A box centred on (x, y), with ``text`` in its middle. Returns the box's edges as a dict."""
    shape = f"round,pad=0,rounding_size={min(1.2, h / 3, w / 3)}" if round_ else "square,pad=0"
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=shape, fc=fc, ec=ec, lw=lw))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=color, weight=weight, style=style)
    return {"x": x, "y": y, "left": x - w / 2, "right": x + w / 2, "top": y + h / 2, "bottom": y - h / 2}


def arrow(ax, start, end, color=LINE, lw=1.1, style="-|>", rad=0.0, shrink=0.0, ls="-"):
    """An arrow from ``start`` to ``end``; ``rad`` bends it, ``shrink`` leaves a gap at both ends."""
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=11,
            color=color,
            lw=lw,
            connectionstyle=f"arc3,rad={rad}",
            shrinkA=shrink,
            shrinkB=shrink,
            linestyle=ls,
        )
    )


def line(ax, xs, ys, color=LINE, lw=1.1, ls="-"):
    ax.plot(xs, ys, color=color, lw=lw, ls=ls, solid_capstyle="butt")


def text(ax, x, y, s, size=10, color="black", ha="center", va="center", **kw):
    ax.text(x, y, s, fontsize=size, color=color, ha=ha, va=va, **kw)


def circle_op(ax, x, y, symbol, r=1.3, fc="white"):
    """A small circle with an operator in it: + for a sum, × for an element-wise product."""
    ax.add_patch(plt.Circle((x, y), r, fc=fc, ec=LINE, lw=1.1))
    ax.text(x, y - 0.05, symbol, ha="center", va="center", fontsize=11)


def grid(ax, x, y, rows, cols, cell, colors, ec="white"):
    """A rows x cols grid of cells with its top-left corner at (x, y); ``colors(r, c)`` fills a cell."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x + c * cell, y - (r + 1) * cell), cell, cell, fc=colors(r, c), ec=ec, lw=0.8))


def brace(ax, x0, x1, y, label, size=9, down=True):
    """A square bracket under (or over) the span x0..x1 at height y, labelled in its middle."""
    d = -1 if down else 1
    line(ax, [x0, x0, x1, x1], [y - d * 0.8, y, y, y - d * 0.8], color=MUTED, lw=1)
    text(ax, (x0 + x1) / 2, y + d * 1.4, label, size=size, color=MUTED)


# --- chapter 1 ---------------------------------------------------------------------------------------------------


def skipgram_negative_sampling():
    fig, ax = canvas(100, 66, "Skip-gram with negative sampling: one training pair and K = 3 noise words")
    words = "the cat saw a hungry mouse near the hole .".split()
    centre, window = 5, 2
    xs = [9 + 9.2 * i for i in range(len(words))]
    text(ax, 2, 57, "sentence", size=9, color=MUTED, ha="left")
    for i, (x, w) in enumerate(zip(xs, words)):
        fc = HIGHLIGHT if i == centre else EMBED if abs(i - centre) <= window else "white"
        box(ax, x, 53, 8.2, 4, w, fc=fc)
    brace(
        ax,
        xs[centre - window] - 4.1,
        xs[centre + window] + 4.1,
        50.2,
        "context window: up to 2 words on each side of the centre word",
    )
    text(ax, xs[centre], 57.8, "centre $c$", size=9)
    text(ax, xs[centre - 1], 57.8, "context $o$", size=9)

    # the two tables of vectors
    def table(x, y, label, rows, marks, labels_right=False):
        text(ax, x + 6, y + 2.2, label, size=9.5)
        for r, word in enumerate(rows):
            fc = marks.get(word, "white")
            box(ax, x + 6, y - 1.6 - 2.6 * r, 12, 2.6, "", fc=fc, round_=False, lw=0.8)
            text(
                ax,
                x + 13 if labels_right else x - 1,
                y - 1.6 - 2.6 * r,
                word,
                size=8.5,
                ha="left" if labels_right else "right",
                color=MUTED,
            )
        text(ax, x + 6, y - 2.6 * len(rows) - 1.4, "$|V|$ rows of $d$ numbers", size=8.5, color=MUTED)

    rows_in = ["cat", "hole", "hungry", "mouse", "pasta", "violin", "the", "..."]
    table(10, 42, "input vectors $W$: rows $v_w$", rows_in, {"mouse": HIGHLIGHT})
    table(
        74,
        42,
        "output vectors $W'$: rows $v'_w$",
        rows_in,
        {"hungry": EMBED, "pasta": NOISE, "violin": NOISE, "the": NOISE},
        labels_right=True,
    )
    box(ax, 80, 13.5, 27, 6.5, "noise words drawn from\n$P_n(w) \\propto U(w)^{3/4}$", fc=NOISE, size=9)
    arrow(ax, (80, 16.8), (80, 19.2))

    # the four logistic regressions
    pairs = [
        ("hungry", "1", EMBED, "$\\sigma(v_c^\\top v'_o)$"),
        ("pasta", "0", NOISE, "$\\sigma(v_c^\\top v'_{n_1})$"),
        ("violin", "0", NOISE, "$\\sigma(v_c^\\top v'_{n_2})$"),
        ("the", "0", NOISE, "$\\sigma(v_c^\\top v'_{n_3})$"),
    ]
    text(ax, 48, 42.5, "one logistic regression per pair", size=9.5)
    for j, (word, target, fc, formula) in enumerate(pairs):
        y = 37.5 - 6.2 * j
        box(ax, 48, y, 26, 4.4, f"{formula}  →  target {target}", fc=fc, size=9.5)
        arrow(ax, (22.5, 42 - 1.6 - 2.6 * 3), (34.8, y), color="#b08d00", lw=0.9)
        row = rows_in.index(word)
        arrow(ax, (73.8, 42 - 1.6 - 2.6 * row), (61.2, y), color=MUTED, lw=0.9)
    text(
        ax,
        48,
        8.5,
        "$\\ell = -\\log\\sigma(v_c^\\top v'_o) - \\sum_{k=1}^{K} \\log\\sigma(-v_c^\\top v'_{n_k})$",
        size=12,
    )
    text(
        ax,
        48,
        3.5,
        "cost per pair: $K + 1$ dot products of size $d$, instead of $|V|$ for a full softmax",
        size=9,
        color=MUTED,
    )
    return fig


def hierarchical_softmax():
    fig, ax = canvas(100, 58, "Hierarchical softmax: a word's probability is a path of binary decisions")
    leaves = ["cat", "dog", "mouse", "owl", "bank", "river", "bread", "soup"]
    path = [1, 2, 5, 10]  # heap numbering: node n has children 2n (left) and 2n + 1 (right)
    levels = {1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2, 7: 2}

    def pos(n):
        if n >= 8:
            return 8 + 10.5 * (n - 8), 11
        depth = levels[n]
        first = 2**depth
        span = 8 * 10.5 / 2**depth
        return 8 - 5.25 + span * (n - first + 0.5), 47 - 12 * depth

    for n in range(1, 8):
        x, y = pos(n)
        for child in (2 * n, 2 * n + 1):
            cx, cy = pos(child)
            on_path = n in path and child in path
            line(ax, [x, cx], [y - 1.8, cy + 1.8], color="#b08d00" if on_path else "#bbbbbb", lw=2.2 if on_path else 1)
            if on_path:
                go_left = child == 2 * n
                label = f"$\\sigma({'' if go_left else '-'}u_{{{n}}}^\\top v_c)$"
                text(ax, (x + cx) / 2 + (-4.3 if go_left else 4.3), (y + cy) / 2 + 0.6, label, size=10, color="#7a6200")
        fc = HIGHLIGHT if n in path else "white"
        ax.add_patch(plt.Circle((x, y), 1.9, fc=fc, ec=LINE, lw=1))
        text(ax, x, y, f"$u_{{{n}}}$", size=9.5)
    for i, word in enumerate(leaves):
        x, y = pos(8 + i)
        box(ax, x, y, 8.4, 3.6, word, fc=HIGHLIGHT if 8 + i == path[-1] else EMBED)
    text(ax, 92, 47, "root", size=9, color=MUTED)
    text(ax, 92, 40, "each inner node $n$\nhas a vector $u_n$", size=9, color=MUTED)
    text(ax, 92, 11, "$|V| = 8$\nleaves", size=9, color=MUTED)
    text(
        ax,
        50,
        5,
        "$p(\\mathrm{mouse} \\mid c) = \\sigma(u_1^\\top v_c)\\,\\sigma(-u_2^\\top v_c)\\,"
        "\\sigma(u_5^\\top v_c)$: $\\log_2 |V| = 3$ factors, not a sum over $|V|$ words",
        size=10.5,
    )
    return fig


# --- chapter 2 ---------------------------------------------------------------------------------------------------


def lstm_cell():
    fig, ax = canvas(114, 56, "An LSTM cell: three gates decide what the cell state forgets, adds and shows")
    # the cell state along the top, the hidden state along the bottom
    yc, yh = 42, 12
    text(ax, 4, yc, "$c_{t-1}$", size=12)
    text(ax, 4, yh, "$h_{t-1}$", size=12)
    ax.add_patch(
        FancyBboxPatch((9, 6), 56, 42, boxstyle="round,pad=0,rounding_size=2", fc="#fafafa", ec=MUTED, lw=1, ls="--")
    )
    fx, ix = 20, 36
    arrow(ax, (6.5, yc), (fx - 1.3, yc))
    circle_op(ax, fx, yc, "×")
    arrow(ax, (fx + 1.3, yc), (ix - 1.3, yc))
    circle_op(ax, ix, yc, "+")
    arrow(ax, (ix + 1.3, yc), (70, yc))
    text(ax, 73, yc, "$c_t$", size=12)
    text(ax, 28, yc + 2.3, "cell state: only × and +, no matrix", size=8.5, color=MUTED)

    # gates from [h_{t-1}, x_t]
    line(ax, [6.5, 12], [yh, yh])
    text(ax, 12, 2.5, "$x_t$", size=12)
    line(ax, [12, 12], [4, yh])
    line(ax, [12, 12], [yh, 18])
    line(ax, [12, 52], [18, 18])
    gates = [
        (fx, "$\\sigma$", "$f_t$", "forget"),
        (30, "$\\sigma$", "$i_t$", "input"),
        (40, "tanh", "$g_t$", "candidate"),
        (52, "$\\sigma$", "$o_t$", "output"),
    ]
    for x, fn, name, label in gates:
        box(ax, x, 23.5, 6.5, 4, fn, fc=FFN if fn != "tanh" else EMBED)
        arrow(ax, (x, 18), (x, 21.5))
        left = name == "$i_t$"  # the arrow from i_t leans right: name it on the left
        text(ax, x - 1.1 if left else x + 1.1, 28.5, name, size=10.5, ha="right" if left else "left")
        text(ax, x, 15.7, label, size=8, color=MUTED)
    arrow(ax, (fx, 25.5), (fx, yc - 1.3))
    circle_op(ax, 35, 32, "×")
    arrow(ax, (30, 25.5), (34.0, 31.1))
    arrow(ax, (40, 25.5), (36.0, 31.1))
    arrow(ax, (35, 33.3), (ix - 0.1, yc - 1.3))
    # output: h_t = o_t * tanh(c_t)
    line(ax, [60, 60], [yc, 37])
    box(ax, 60, 34.5, 6.5, 3.6, "tanh", fc=EMBED)
    arrow(ax, (60, 32.7), (60, 25.3))
    circle_op(ax, 60, 24, "×")
    arrow(ax, (55.3, 23.5), (58.7, 23.9))
    line(ax, [60, 60], [22.7, yh])
    arrow(ax, (60, yh), (70, yh))
    text(ax, 73, yh, "$h_t$", size=12)
    arrow(ax, (64, yh), (64, 3.5))
    text(ax, 66, 3.5, "to the next layer", size=8.5, color=MUTED, ha="left")

    eqs = [
        "$f_t = \\sigma(W_f x_t + U_f h_{t-1} + b_f)$",
        "$i_t = \\sigma(W_i x_t + U_i h_{t-1} + b_i)$",
        "$g_t = \\tanh(W_g x_t + U_g h_{t-1} + b_g)$",
        "$o_t = \\sigma(W_o x_t + U_o h_{t-1} + b_o)$",
        "$c_t = f_t \\odot c_{t-1} + i_t \\odot g_t$",
        "$h_t = o_t \\odot \\tanh(c_t)$",
    ]
    for k, eq in enumerate(eqs):
        text(ax, 77, 40 - 5.2 * k, eq, size=9.5, ha="left")
    text(ax, 77, 45.5, "every step $t$:", size=9.5, color=MUTED)
    return fig


def elmo_stack():
    fig, ax = canvas(126, 72, "ELMo: a character CNN under two LSTM language models, one per direction")
    # left: the character encoder for one word
    cx = 22
    text(ax, cx, 64, "character encoder (one word)", size=10, weight="bold")
    chars = ["bow", "m", "o", "u", "s", "e", "eow", "0", "0"]
    for i, ch in enumerate(chars):
        fc = NORM if ch == "0" else HIGHLIGHT if ch in "mouse" else EMBED
        label = f"⟨{ch}⟩" if ch in ("bow", "eow") else ch
        box(ax, 5.5 + 4.1 * i, 12, 3.9, 3.4, label, fc=fc, size=8.5 if len(label) == 1 else 6.5, round_=False)
    text(ax, cx, 7.6, "UTF-8 bytes + markers, padded to $C$ ids", size=8.5, color=MUTED)
    steps = [
        (20.5, "character embeddings  $[C, 16]$", EMBED),
        (29, "convolutions of several widths,\nmax-pooled over the word  $[\\Sigma\\,\\mathrm{filters}]$", FFN),
        (38, "2 highway layers  $[\\Sigma\\,\\mathrm{filters}]$", FFN),
        (45.5, "linear projection  $[\\mathrm{dim}]$", NORM),
    ]
    previous = 13.9
    for y, label, fc in steps:
        h = 6 if "\n" in label else 4
        b = box(ax, cx, y, 36, h, label, fc=fc, size=9)
        arrow(ax, (cx, previous), (cx, b["bottom"]))
        previous = b["top"]
    b = box(ax, cx, 53.5, 16, 4, "$x_k$ (mouse)", fc=HIGHLIGHT, size=10)
    arrow(ax, (cx, previous), (cx, b["bottom"]))
    text(ax, cx, 58.5, "one vector per word, from its spelling:\nno unknown words", size=8.5, color=MUTED)

    # right: the biLM over a sentence
    words = ["<s>", "the", "mouse", "ate", "cheese", "</s>"]
    xs = [52 + 10.6 * i for i in range(len(words))]
    mid = (xs[0] + xs[-1]) / 2
    text(ax, mid, 64, "biLM over a sentence ($T$ positions)", size=10, weight="bold")
    y_tok, y_enc, y1, y2, y_out = 8, 15, 26, 37, 50
    for x, w in zip(xs, words):
        text(ax, x, y_tok, w, size=9.5)
        box(ax, x, y_enc, 8.6, 3.6, "char CNN", fc=EMBED, size=8)
        arrow(ax, (x, y_tok + 1.3), (x, y_enc - 1.8))
        for y in (y1, y2):
            box(ax, x - 2.2, y, 4, 4.4, "→", fc=FFN, size=10)
            box(ax, x + 2.2, y, 4, 4.4, "←", fc=ATTN, size=10)
        for dx in (-2.2, 2.2):
            arrow(ax, (x, y_enc + 1.8), (x + dx, y1 - 2.2))
            arrow(ax, (x + dx, y1 + 2.2), (x + dx, y2 - 2.2))
    for a, b in zip(xs, xs[1:]):
        for y in (y1, y2):
            arrow(ax, (a - 0.2, y + 0.9), (b - 4.2, y + 0.9), color="#2b7a2b")
            arrow(ax, (b + 0.2, y - 0.9), (a + 4.2, y - 0.9), color="#b35900")
    right = xs[-1] + 6
    text(ax, right, y_enc, "layer 0", size=8.5, ha="left", color=MUTED)
    text(ax, right, y1, "LSTM\nlayer 1", size=8.5, ha="left", color=MUTED)
    text(ax, right, y2, "LSTM\nlayer 2\n(+ its input)", size=8.5, ha="left", color=MUTED)
    text(ax, mid, 60.3, "→ forward LM, ← backward LM, each with its own weights", size=8.5, color=MUTED)
    m = xs[2]
    box(ax, mid, y_out, 52, 4, "one softmax over the word vocabulary, shared", fc=OUT, size=9)
    arrow(ax, (m - 2.2, y2 + 2.2), (m - 2.2, y_out - 2))
    arrow(ax, (m + 2.2, y2 + 2.2), (m + 2.2, y_out - 2))
    text(ax, m - 6, y_out + 5, "forward state at mouse\npredicts the next word: ate", size=8.5, color="#2b7a2b")
    text(ax, m + 25, y_out + 5, "backward state at mouse\npredicts the previous word: the", size=8.5, color="#b35900")
    text(
        ax,
        mid + 2,
        2.5,
        "ELMo's vectors of word $k$: $[x_k; x_k]$, then "
        "$[\\overrightarrow{h}_k; \\overleftarrow{h}_k]$ per layer: $[L+1, T, 2\\,\\mathrm{dim}]$",
        size=8.5,
        color=MUTED,
    )
    return fig


# --- chapter 3 ---------------------------------------------------------------------------------------------------


def _block_column(ax, x, items, y0, residual_pairs, heading, footer):
    """A vertical stack of boxes (bottom to top) with arrows, and residual lines around some of them."""
    text(ax, x, 68, heading, size=9.5, weight="bold")
    ys = {}
    y = y0
    arrow(ax, (x, y - 3.5), (x, y - 0.1))
    text(ax, x, y - 5, "$x$  [B, T, d]", size=9.5)
    previous = y
    for key, label, fc, h in items:
        if key.startswith("+"):
            circle_op(ax, x, y + 1.3, "+")
            arrow(ax, (x, previous), (x, y))
            ys[key] = y + 1.3
            previous, y = y + 2.6, y + 5.2
            continue
        b = box(ax, x, y + h / 2, 23, h, label, fc=fc, size=9)
        arrow(ax, (x, previous), (x, b["bottom"]))
        ys[key] = (b["bottom"], b["top"])
        previous, y = b["top"], b["top"] + 2.6
    arrow(ax, (x, previous), (x, previous + 3))
    text(ax, x, previous + 4.3, "[B, T, d]", size=9.5)
    for start, end in residual_pairs:
        y_from = start if isinstance(start, float) else ys[start][0] - 1.3
        y_to = ys[end]
        line(ax, [x, x - 14, x - 14], [y_from, y_from, y_to], color="#2b6cb0", lw=1.3)
        arrow(ax, (x - 14, y_to), (x - 1.3, y_to), color="#2b6cb0", lw=1.3)
    text(ax, x, 8.5, footer, size=8.5, color=MUTED)


def transformer_block():
    fig, ax = canvas(110, 76, "A transformer block, two ways: LayerNorm before (pre-LN) or after (post-LN)")
    attn = "masked multi-head\nself-attention"
    ffn = "feed-forward network\n$d \\to 4d$, GELU, $4d \\to d$"
    ffn_named = "feed-forward network (ffn)\n$d \\to 4d$, GELU, $4d \\to d$"
    pre = [
        ("ln_1", "LayerNorm  (ln_1)", NORM, 3.6),
        ("attn", attn + "  (attn)", ATTN, 6),
        ("+1", "", None, 0),
        ("ln_2", "LayerNorm  (ln_2)", NORM, 3.6),
        ("ffn", ffn_named, FFN, 6),
        ("+2", "", None, 0),
    ]
    _block_column(
        ax,
        32,
        pre,
        19,
        [("ln_1", "+1"), ("ln_2", "+2")],
        "pre-LN: GPT-2, word2bert's GPT",
        "the residual path is never normalised;\na final LayerNorm after the last block",
    )
    post = [
        ("attn", attn, ATTN, 6),
        ("+1", "", None, 0),
        ("ln_1", "LayerNorm  (ln_1)", NORM, 3.6),
        ("ffn", ffn, FFN, 6),
        ("+2", "", None, 0),
        ("ln_2", "LayerNorm  (ln_2)", NORM, 3.6),
    ]
    _block_column(
        ax,
        84,
        post,
        19,
        [("attn", "+1"), ("ffn", "+2")],
        "post-LN: original transformer, GPT-1, BERT",
        "every block hands on\nnormalised vectors",
    )
    text(ax, 58, 62, "the model stacks $L$ blocks", size=9, color=MUTED)
    text(ax, 58, 37, "blue: residual\nconnections", size=8.5, color="#2b6cb0")
    text(ax, 55, 2.5, "BERT's attention has no causal mask", size=8.5, color=MUTED)
    return fig


def multihead_reshape():
    fig, ax = canvas(110, 70, "Multi-head attention is a reshape: the d numbers of a position split into h heads")
    T, h, dk = 4, 4, 2
    cell = 2.0
    # step 1: the projections
    steps = ["$X$\n[B, T, d]", "w_qkv\n[B, T, 3d]", "split\n$Q, K, V$: [B, T, d] each"]
    xs = [8, 24, 45]
    for i, (x, s) in enumerate(zip(xs, steps)):
        box(ax, x, 58, 13 if i < 2 else 22, 6, s, fc=EMBED if i == 0 else NORM, size=9)
        if i:
            arrow(ax, (xs[i - 1] + (6.5 if i == 1 else 6.5), 58), (x - (6.5 if i == 1 else 11), 58))
    # step 2: one of Q, K, V as a T x d grid with columns coloured by head
    gx, gy = 6, 46
    text(ax, gx + T * cell, gy + 2, "$Q$ of one sequence: $T \\times d$", size=9)
    grid(ax, gx, gy, T, h * dk, cell, lambda r, c: HEADS[c // dk])
    for r in range(T):
        text(ax, gx - 1.2, gy - (r + 0.5) * cell, f"{r + 1}", size=8, color=MUTED)
    text(ax, gx - 3.6, gy - T * cell / 2, "position", size=8, color=MUTED, rotation=90)
    brace(ax, gx, gx + dk * cell, gy - T * cell - 0.8, "$d_k = d/h$", size=8.5)
    text(
        ax,
        gx - 4,
        gy - T * cell - 5.2,
        "$d = h \\cdot d_k$ columns, one colour per head",
        size=8.5,
        color=MUTED,
        ha="left",
    )
    arrow(ax, (gx + h * dk * cell + 1.5, gy - T * cell / 2), (44, gy - T * cell / 2))
    text(ax, 33.5, gy - T * cell / 2 + 3.2, ".view(B, T, h, d_k)\n.transpose(1, 2)", size=9, family="DejaVu Sans Mono")
    text(ax, 33.5, gy - T * cell / 2 - 3.2, "[B, T, d] → [B, h, T, d_k]", size=9)
    # step 3: h separate T x d_k grids, each attends on its own
    hx = 46
    for j in range(h):
        x = hx + j * 9
        grid(ax, x, gy, T, dk, cell, lambda r, c, j=j: HEADS[j])
        text(ax, x + dk * cell / 2, gy + 2, f"head {j + 1}", size=8.5, color=HEADS[j])
    text(ax, hx + 17, gy - T * cell - 2.2, "$h$ sequences of $T \\times d_k$", size=8.5, color=MUTED)
    # step 4: attention per head
    ay = 26
    box(
        ax,
        62,
        ay,
        44,
        8.5,
        "in each head: $\\mathrm{softmax}(Q_i K_i^\\top / \\sqrt{d_k})\\, V_i$\n"
        "weights [B, h, T, T], outputs [B, h, T, d_k]\n(one batched matmul for all heads)",
        fc=ATTN,
        size=9,
    )
    arrow(ax, (62, gy - T * cell - 3.5), (62, ay + 4.3))
    # step 5: back
    back = [
        (62, 11, ".transpose(1, 2).reshape(B, T, d)\n[B, h, T, d_k] → [B, T, d]: heads side by side"),
        (22, 11, "w_o\n[B, T, d] → [B, T, d]"),
    ]
    box(ax, back[0][0], back[0][1], 44, 6.5, back[0][2], fc=NORM, size=9)
    arrow(ax, (62, ay - 4.3), (62, 14.3))
    box(ax, back[1][0], back[1][1], 22, 6.5, back[1][2], fc=EMBED, size=9)
    arrow(ax, (40, 11), (33.1, 11))
    text(
        ax,
        55,
        3,
        "$\\mathrm{MultiHead}(X) = \\mathrm{Concat}(\\mathrm{head}_1, \\dots, \\mathrm{head}_h)\\,W^O$"
        "  (MultiHeadSelfAttention in word2bert.transformer)",
        size=9,
        color=MUTED,
    )
    return fig


def kv_cache():
    fig, ax = canvas(110, 66, "The KV cache: generating token t feeds only token t, and reuses the keys and values")
    # left: what each generation step computes, without and with the cache
    T, prompt, cell = 7, 3, 2.6

    def steps_grid(x0, title, cached):
        text(ax, x0 + T * cell / 2, 58, title, size=9.5, weight="bold")
        for s in range(T - prompt + 1):
            n = prompt + s  # positions known at this step
            for p in range(T):
                if p >= n:
                    fc, ec = "white", "#dddddd"
                elif cached and s > 0 and p < n - 1:
                    fc, ec = NORM, "white"
                else:
                    fc, ec = HIGHLIGHT, "white"
                ax.add_patch(Rectangle((x0 + p * cell, 52 - (s + 1) * cell), cell, cell, fc=fc, ec=ec, lw=0.8))
            text(ax, x0 - 1, 52 - (s + 0.5) * cell, f"{s + 1}", size=8, color=MUTED, ha="right")
        for p in range(T):
            text(ax, x0 + (p + 0.5) * cell, 53.2, f"{p + 1}", size=8, color=MUTED)
        text(ax, x0 + T * cell / 2, 55.3, "position", size=8, color=MUTED)

    steps_grid(9, "without the cache", False)
    steps_grid(33, "with the cache", True)
    text(ax, 4, 52 - 2.5 * cell, "step", size=8, color=MUTED, rotation=90)
    box(ax, 13, 29, 2.4, 2.4, "", fc=HIGHLIGHT, round_=False, ec="white")
    text(ax, 15, 29, "fed to the model and computed at this step", size=8.5, ha="left")
    box(ax, 13, 25.5, 2.4, 2.4, "", fc=NORM, round_=False, ec="white")
    text(ax, 15, 25.5, "keys and values read from the cache", size=8.5, ha="left")
    text(
        ax,
        30,
        19.5,
        "generating $T$ tokens: $O(T^2)$ positions recomputed\nwithout the cache, $O(T)$ with it",
        size=9,
        color=MUTED,
    )

    # right: one attention layer at step t
    rx = 62
    text(ax, 86, 58, "one attention layer at step $t$ = 5", size=9.5, weight="bold")
    keys = ["$k_1$", "$k_2$", "$k_3$", "$k_4$", "$k_5$"]
    vals = ["$v_1$", "$v_2$", "$v_3$", "$v_4$", "$v_5$"]
    for i, (k, v) in enumerate(zip(keys, vals)):
        fc = HIGHLIGHT if i == 4 else NORM
        box(ax, rx + 4 + 7.5 * i, 35, 6, 3.6, k, fc=fc, size=10)
        box(ax, rx + 4 + 7.5 * i, 42, 6, 3.6, v, fc=fc, size=10)
    text(ax, rx - 1, 35, "K", size=10, ha="right", weight="bold")
    text(ax, rx - 1, 42, "V", size=10, ha="right", weight="bold")
    brace(ax, rx + 1, rx + 29.5, 30.5, "in the KVCache: [B, h, t−1, d_k]", size=8.5)
    text(ax, rx + 34, 46.5, "new: [B, h, 1, d_k]", size=8.5, color=MUTED)
    text(ax, rx + 23, 50.5, "cache.extend: torch.cat along dim −2 → [B, h, t, d_k]", size=8.5, color=MUTED)
    box(ax, rx + 34, 17, 6, 3.6, "$q_5$", fc=HIGHLIGHT, size=10)
    text(ax, rx + 34, 12.5, "the only query\n[B, h, 1, d_k]", size=8.5, color=MUTED)
    for i in range(5):
        arrow(ax, (rx + 34, 18.8), (rx + 4 + 7.5 * i, 26.5 if i < 4 else 33.2), color="#b08d00", lw=0.8)
    text(ax, rx + 10, 19, "weights [B, h, 1, t]:\nno mask needed, every\nkey is in the past", size=8.5, color=MUTED)
    text(
        ax,
        55,
        4,
        "Feeding only the new token is exact because of the causal mask: the vectors of earlier "
        "positions never change.",
        size=8.5,
        color=MUTED,
    )
    return fig


# --- chapter 4 ---------------------------------------------------------------------------------------------------


def bert_embeddings():
    fig, ax = canvas(110, 52, "BERT's input: three embeddings summed, then LayerNorm and dropout")
    tokens = ["[CLS]", "the", "bat", "flew", "[SEP]", "into", "the", "cave", "[SEP]"]
    segment = ["A"] * 5 + ["B"] * 4
    xs = [26 + 9.2 * i for i in range(len(tokens))]
    rows = [
        (43, "input pieces", None),
        (35, "word_embeddings\n[vocab_size, H]", EMBED),
        (27, "token_type_embeddings\n[2, H]  (segment A or B)", FFN),
        (19, "position_embeddings\n[max_positions, H]", ATTN),
    ]
    for y, label, fc in rows:
        text(ax, 1, y, label, size=8.5, ha="left", color="black" if fc is None else "#333333")
    for i, (x, tok, seg) in enumerate(zip(xs, tokens, segment)):
        box(ax, x, 43, 8.2, 4, tok, fc=HIGHLIGHT if tok.startswith("[") else "white", size=9)
        box(
            ax,
            x,
            35,
            8.2,
            4,
            f"$E_{{\\mathrm{{{tok.strip('[]')}}}}}$".replace("CLS", "[CLS]").replace("SEP", "[SEP]"),
            fc=EMBED,
            size=9,
        )
        box(ax, x, 27, 8.2, 4, f"$E_{seg}$", fc=FFN, size=9)
        box(ax, x, 19, 8.2, 4, f"$E_{{{i}}}$", fc=ATTN, size=9)
        for y in (31, 23):
            text(ax, x, y, "+", size=11)
        arrow(ax, (x, 16.8), (x, 13.2))
    box(ax, (xs[0] + xs[-1]) / 2, 11, xs[-1] - xs[0] + 8.2, 4, "sum → LayerNorm → dropout", fc=NORM, size=9.5)
    arrow(ax, ((xs[0] + xs[-1]) / 2, 8.8), ((xs[0] + xs[-1]) / 2, 5.9))
    text(ax, (xs[0] + xs[-1]) / 2, 4.3, "$[B, T, H]$ into the first block", size=9.5)
    text(ax, 1, 11, "Embeddings.forward", size=8.5, ha="left", family="DejaVu Sans Mono")
    return fig


def mlm_nsp_pipeline():
    fig, ax = canvas(110, 100, "From documents to a pre-training batch: next-sentence pairs, then masks")
    cx = 20
    stages = [
        (88, "documents\n(toy world + WordNet)", EMBED, "lists of sentences of words"),
        (77, "tokenize_documents", NORM, "every sentence → WordPiece ids"),
        (
            63,
            "create_pretraining_instances",
            NORM,
            "fill a chunk up to max_seq_length − 3 pieces,\ncut it at a random sentence: A | B\n"
            "50%: B = the rest of the chunk (IsNext, 0)\n50%: B from another document (NotNext, 1)\n"
            "trim the longer segment; balance the labels",
        ),
        (
            46,
            "PretrainingCollator",
            NORM,
            "[CLS] A [SEP] B [SEP], segments 0…0 1…1, pad\n"
            "mask_tokens: 15% of the non-special pieces;\nof those 80% [MASK], 10% random, 10% kept\n"
            "new masks for every batch (dynamic masking)",
        ),
        (
            31,
            "BertForPreTraining",
            OUT,
            "MLM head on every position, loss where label ≠ −100\n"
            "NSP head on the pooled [CLS] vector\nloss = MLM cross-entropy + NSP cross-entropy",
        ),
    ]
    previous = None
    for y, name, fc, note in stages:
        b = box(ax, cx, y, 33, 5.5, name, fc=fc, size=9.5, weight="normal" if fc is EMBED else "bold")
        text(ax, cx + 18.5, y, note, size=8.5, ha="left", color="#333333")
        if previous is not None:
            arrow(ax, (cx, previous), (cx, b["top"]))
        previous = b["bottom"]

    # an example instance, before and after masking
    ex = ["[CLS]", "the", "cat", "chased", "a", "mouse", "[SEP]", "it", "hid", "[SEP]"]
    types = [0] * 7 + [1] * 3
    after = ["[CLS]", "the", "cat", "[MASK]", "a", "mouse", "[SEP]", "it", "ran", "[SEP]"]
    labels = ["−100", "−100", "−100", "chased", "−100", "−100", "−100", "−100", "hid", "−100"]
    x0, dx = 30, 7.4
    text(ax, 55, 24.5, "one instance (IsNext) in the batch", size=9.5, weight="bold")
    rows = [
        (20, "pieces", ex, "white"),
        (16, "token_type_ids", types, FFN),
        (12, "input_ids", after, None),
        (8, "labels", labels, None),
    ]
    for y, name, values, fc in rows:
        text(ax, x0 - 4.2, y, name, size=8, ha="right", color=MUTED, family="DejaVu Sans Mono")
        for i, v in enumerate(values):
            changed = name == "input_ids" and v != ex[i]
            cell_fc = fc or (HIGHLIGHT if changed else OUT if name == "labels" and v != "−100" else "white")
            box(ax, x0 + dx * i, y, 7.0, 3.2, str(v), fc=cell_fc, size=8, round_=False, lw=0.6)
    text(
        ax, x0 + 4.5 * dx, 4.2, "here two pieces were chosen: chased → [MASK], hid → ran (random)", size=8, color=MUTED
    )
    text(
        ax,
        x0 + 4.5 * dx,
        1.7,
        "batch: input_ids, token_type_ids, attention_mask, labels [B, T]; next_sentence_label [B]",
        size=8,
        color=MUTED,
    )
    return fig


# --- what each model sees: ELMo, GPT, BERT (after BERT's Figure 3) -------------------------------------------------

CONTEXT_TOKENS = ["the", "bat", "hit", "the", "ball"]  # the cue, "ball", stands after the word
CONTEXT_WORD = 1
SEEN = "#b4521a"  # the connections that reach the word's top vector
PANEL_H = 30


def _context_tokens(ax, xs, y, seen):
    for i, (x, token) in enumerate(zip(xs, CONTEXT_TOKENS)):
        fc = HIGHLIGHT if i == CONTEXT_WORD else EMBED if i in seen else "white"
        box(ax, x, y, 9.4, 3.8, token, fc=fc, size=11, color="black" if i in seen else MUTED)


def _attention_panel(ax, y0, causal):
    """Two transformer layers over the tokens; every connection in grey, those that reach the word's top vector in
    colour. ``causal``: position i reads positions j <= i only (GPT); otherwise every position (BERT)."""
    xs = [9 + 11.5 * i for i in range(len(CONTEXT_TOKENS))]
    rows = [y0 + 3, y0 + 11, y0 + 19]  # tokens, layer 1, layer 2
    reach = {2: {CONTEXT_WORD}}  # positions whose vector at a row feeds the word's vector at the top row
    for r in (1, 0):
        reach[r] = {j for i in reach[r + 1] for j in range(len(xs)) if not causal or j <= i}
    for r in (1, 2):
        for i in range(len(xs)):
            for j in range(len(xs)):
                if causal and j > i:
                    continue
                hot = i in reach[r] and j in reach[r - 1]
                line(
                    ax,
                    [xs[j], xs[i]],
                    [rows[r - 1] + 1.8, rows[r] - 1.5],
                    color=SEEN if hot else "#cccccc",
                    lw=1.4 if hot else 0.7,
                )
        for i, x in enumerate(xs):
            fc = HIGHLIGHT if (r == 2 and i == CONTEXT_WORD) else ATTN if i in reach[r] else "white"
            box(ax, x, rows[r], 8.4, 3.2, "Trm", fc=fc, size=10.5)
    _context_tokens(ax, xs, rows[0], reach[0])
    return xs


def _lstm_panel(ax, y0):
    """ELMo: a forward LSTM over the tokens, a backward one under them, and the word's vector joining the two."""
    xs = [9 + 11.5 * i for i in range(len(CONTEXT_TOKENS))]
    forward_y, token_y, backward_y = y0 + 19, y0 + 11, y0 + 3
    for i, x in enumerate(xs):
        fwd, bwd = i <= CONTEXT_WORD, i >= CONTEXT_WORD
        box(ax, x, forward_y, 9.4, 3.2, "LSTM →", fc=ATTN if fwd else "white", size=10)
        box(ax, x, backward_y, 9.4, 3.2, "← LSTM", fc=FFN if bwd else "white", size=10)
        arrow(ax, (x, token_y + 1.8), (x, forward_y - 1.5), color=SEEN if fwd else "#bbbbbb", lw=1.2 if fwd else 0.7)
        arrow(ax, (x, token_y - 1.8), (x, backward_y + 1.5), color=SEEN if bwd else "#bbbbbb", lw=1.2 if bwd else 0.7)
        if i + 1 < len(xs):
            arrow(
                ax,
                (x + 4.7, forward_y),
                (xs[i + 1] - 4.7, forward_y),
                color=SEEN if i < CONTEXT_WORD else "#bbbbbb",
                lw=1.2 if i < CONTEXT_WORD else 0.7,
            )
            arrow(
                ax,
                (xs[i + 1] - 4.7, backward_y),
                (x + 4.7, backward_y),
                color=SEEN if i >= CONTEXT_WORD else "#bbbbbb",
                lw=1.2 if i >= CONTEXT_WORD else 0.7,
            )
    _context_tokens(ax, xs, token_y, set(range(len(xs))))
    return xs


CONTEXT_PANELS = {  # name: (heading, what the word's vector has read)
    "ELMo": (
        "two one-way LSTMs, joined at the end",
        "bat = [forward state ; backward state]:\nforward half: 'the bat'; backward half: 'bat hit the ball'",
    ),
    "GPT": (
        "attention to the left only",
        "bat's vector never reads 'hit the ball', in any layer:\nthe cue 'ball' comes too late",
    ),
    "BERT": (
        "attention to both sides, in every layer",
        "bat's vector reads 'ball' from the first layer on,\nand every layer mixes both sides again",
    ),
}


def _context_panel(ax, y0, name):
    heading, note = CONTEXT_PANELS[name]
    text(ax, 2, y0 + PANEL_H - 2.2, f"{name}: {heading}", size=11.5, weight="bold", ha="left")
    if name == "ELMo":
        _lstm_panel(ax, y0 + 5.2)
    else:
        _attention_panel(ax, y0 + 5.2, causal=name == "GPT")
    text(ax, 2, y0 + 2.6, note, size=10, color=LINE, ha="left")


def _context_figure(names, title):
    height = PANEL_H * len(names) + 5
    fig, ax = canvas(64, height, title)
    for k, name in enumerate(names):
        y0 = height - 5 - PANEL_H * (k + 1)
        _context_panel(ax, y0, name)
        if k:
            line(ax, [2, 62], [y0 + PANEL_H] * 2, color="#cccccc", lw=0.8)
    return fig


def context_elmo():
    return _context_figure(["ELMo"], "What ELMo's vector of 'bat' has read")


def context_gpt():
    return _context_figure(["GPT"], "What GPT's vector of 'bat' has read")


def context_three():
    return _context_figure(["ELMo", "GPT", "BERT"], "Which words each model's vector of 'bat' has read")


# --- masked language modelling and next-sentence prediction, as ideas ---------------------------------------------


def mlm_concept():
    fig, ax = canvas(64, 95, "Masked language modelling: hide, then predict")
    words = ["the", "cat", "chased", "a", "gray", "mouse", "into", "its", "hole"]
    chosen = {2: ("[MASK]", "chased"), 5: ("lamp", "mouse")}
    xs = [5 + 6.75 * i for i in range(len(words))]

    def row(y, values, fills, size=9.5):
        for x, v, fc in zip(xs, values, fills):
            box(ax, x, y, 6.4, 3.6, v, fc=fc, size=size, round_=False, lw=0.7)

    # 1. choose
    text(ax, 2, 88.5, "1. Choose each piece with probability 15%", size=10.5, weight="bold", ha="left")
    row(84, words, [HIGHLIGHT if i in chosen else "white" for i in range(len(words))])
    text(ax, 32, 80, "here 2 of 9 were chosen; 15 in 100 on average", size=10, color=MUTED)

    # 2. corrupt: the 80/10/10 rule for one chosen piece
    text(ax, 2, 74.5, "2. Change each chosen piece", size=10.5, weight="bold", ha="left")
    box(ax, 10, 66, 10, 3.6, "chased", fc=HIGHLIGHT, size=9.5, round_=False)
    outcomes = [
        (70.5, "[MASK]", "80%", NORM),
        (66, "lamp", "10%: a random piece", NOISE),
        (61.5, "chased", "10%: left as it is", HIGHLIGHT),
    ]
    for y, piece, share, fc in outcomes:
        arrow(ax, (15.2, 66), (27.6, y), lw=0.9)
        box(ax, 32, y, 8.4, 3.4, piece, fc=fc, size=9.5, round_=False)
        text(ax, 37.5, y, share, size=10, ha="left")
    text(
        ax,
        32,
        56.4,
        "so the model cannot count on seeing [MASK]:\nwhen BERT is used later, it never does",
        size=10,
        color=MUTED,
    )

    # 3. read and predict
    text(ax, 2, 51.5, "3. BERT reads the changed sentence and predicts", size=10.5, weight="bold", ha="left")
    changed = [chosen[i][0] if i in chosen else w for i, w in enumerate(words)]
    row(
        46.5,
        changed,
        [NORM if v == "[MASK]" else NOISE if i in chosen else "white" for i, v in enumerate(changed)],
        size=9,
    )
    box(ax, 32, 39, 61, 5, "BERT: every position attends to both sides", fc=ATTN, size=10)
    for x in xs:
        arrow(ax, (x, 44.6), (x, 41.6), lw=0.7, color=MUTED)
        arrow(ax, (x, 36.4), (x, 33.6), lw=0.7, color=MUTED)
    outputs = ["—"] * len(words)
    for i, (_, original) in chosen.items():
        outputs[i] = original
    row(31.5, outputs, [OUT if i in chosen else "white" for i in range(len(words))], size=9)
    targets = "the targets: the original pieces, at the chosen positions only\n(label −100 elsewhere: no loss)"
    text(ax, 32, 27.2, targets, size=10, color=MUTED)

    # next-sentence prediction
    line(ax, [2, 62], [23.3, 23.3], color="#cccccc", lw=0.8)
    text(ax, 2, 20.5, "4. Next-sentence prediction, on the same input", size=10.5, weight="bold", ha="left")
    pairs = [
        (14.5, "50%: B follows A in the text", "label IsNext", FFN),
        (8.5, "50%: B comes from another document", "label NotNext", NOISE),
    ]
    for y, what, label, fc in pairs:
        box(ax, 13, y, 22, 4.2, "[CLS] A [SEP] B [SEP]", fc=fc, size=9, round_=False)
        text(ax, 25.5, y + 1.0, what, size=10, ha="left")
        text(ax, 25.5, y - 1.2, f"target at [CLS]: {label.split()[1]}", size=10, ha="left", color=MUTED)
    text(ax, 32, 3, "pre-training loss = MLM loss + NSP loss", size=10.5, weight="bold")
    return fig


# --- chapter 5 ---------------------------------------------------------------------------------------------------


def _head_panel(ax, x0, y0, title, tokens, segments, reads, head, outputs, shape):
    """One fine-tuning set-up: pieces at the bottom, BERT, output vectors, the head and what it predicts.
    ``outputs`` is one label over the head, or a list with one label per vector the head reads."""
    w = 50
    text(ax, x0 + w / 2, y0 + 30, title, size=10, weight="bold")
    dx = (w - 4) / len(tokens)
    xs = [x0 + 2 + dx * (i + 0.5) for i in range(len(tokens))]
    for x, tok, seg in zip(xs, tokens, segments):
        box(
            ax,
            x,
            y0 + 2,
            dx - 0.6,
            3.2,
            tok,
            fc=FFN if seg else "white",
            size=7.5 if len(tok) < 7 else 6.5,
            round_=False,
            lw=0.6,
        )
        arrow(ax, (x, y0 + 3.6), (x, y0 + 5.4), lw=0.8)
    box(ax, x0 + w / 2, y0 + 7.5, w - 4, 4, "pre-trained BERT encoder (every weight fine-tuned)", fc=EMBED, size=8.5)
    for i, x in enumerate(xs):
        used = i in reads
        box(
            ax,
            x,
            y0 + 13,
            dx - 1.2,
            3,
            "$T$" if used else "",
            fc=HIGHLIGHT if used else NORM,
            size=8,
            round_=False,
            lw=0.6,
            ec=LINE if used else "#bbbbbb",
        )
        arrow(ax, (x, y0 + 9.5), (x, y0 + 11.5), lw=0.8, color=LINE if used else "#bbbbbb")
    one = len(reads) == 1
    hw = 26 if one else w - 4
    hx = max(xs[reads[0]], x0 + 2 + hw / 2) if one else x0 + w / 2
    b = box(ax, hx, y0 + 19.5, hw, 4.4, head, fc=ATTN, size=8)
    for i in reads:
        arrow(ax, (xs[i], y0 + 14.5), (xs[i], b["bottom"]), lw=0.8)
    if isinstance(outputs, str):
        text(ax, hx, y0 + 25, outputs, size=8.5)
    else:
        for i, label in zip(reads, outputs):
            text(ax, xs[i], y0 + 23.6, label, size=8)
    text(ax, x0 + w / 2, y0 - 2.3, shape, size=8, color=MUTED)


def finetuning_heads():
    fig, ax = canvas(110, 84, "Fine-tuning BERT: four tasks, one encoder, a small head each")
    _head_panel(
        ax,
        3,
        45,
        "sentence classification (sentiment)",
        ["[CLS]", "the", "soup", "was", "lovely", "[SEP]"],
        [0] * 6,
        [0],
        "ClassificationHead: pooler\n(dense + tanh), dropout, linear",
        "label: positive",
        "[CLS] vector [B, H] → logits [B, num_labels]",
    )
    _head_panel(
        ax,
        57,
        45,
        "sentence-pair classification (entailment)",
        ["[CLS]", "bob", "ate", "pie", "[SEP]", "someone", "ate", "[SEP]"],
        [0] * 5 + [1] * 3,
        [0],
        "ClassificationHead on [CLS]",
        "entailment / neutral /\ncontradiction",
        "segment B shaded; [CLS] vector → logits [B, 3]",
    )
    _head_panel(
        ax,
        3,
        7,
        "tagging (parts of speech)",
        ["[CLS]", "the", "cat", "slept", "[SEP]"],
        [0] * 5,
        [1, 2, 3],
        "TaggingHead: one linear layer on every vector",
        ["DET", "NOUN", "VERB"],
        "[B, T, H] → [B, T, num_tags]; specials and later pieces: −100",
    )
    _head_panel(
        ax,
        57,
        7,
        "extractive question answering",
        ["[CLS]", "what", "pet", "?", "[SEP]", "rose", "has", "a", "cat", "[SEP]"],
        [0] * 5 + [1] * 5,
        list(range(10)),
        "SpanHead: linear $H \\to 2$, a start and an end score per piece",
        [""] * 8 + ["answer: cat", ""],
        "start, end logits [B, T]; best_span: start ≤ end, in the passage",
    )
    return fig


# --- the landing page ----------------------------------------------------------------------------------------------


class Chapter(NamedTuple):
    """One row of the course map: its number (or ""), title, what its model adds, its exercise, and the pages whose
    notebooks it sums (a page's path from the book's root without suffix, or a folder: every page under it)."""

    number: str
    title: str
    adds: str
    exercise: str
    pages: tuple[str, ...]


CHAPTERS = [
    Chapter("", "Getting started", "set-up, notation, the toy world", "", ("book/toy-world",)),
    Chapter(
        "1",
        "Word vectors: word2vec, GloVe",
        "one vector per word, from its neighbours",
        "exercise 1",
        ("book/01-word-vectors",),
    ),
    Chapter("2", "ELMo", "a vector per word in context, from two LSTMs", "exercise 2", ("book/02-elmo",)),
    Chapter("3", "GPT", "self-attention, left to right; writes text", "exercise 3", ("book/03-gpt",)),
    Chapter(
        "4", "BERT pre-training", "both sides in every layer: masked words", "exercise 4", ("book/04-bert-pretraining",)
    ),
    Chapter("5", "BERT fine-tuning", "one encoder, a small head per task", "exercise 5", ("book/05-bert-finetuning",)),
    Chapter(
        "",
        "Looking back",
        "the course's models side by side; what came after",
        "",
        ("book/comparison", "book/comparison-why", "book/after"),
    ),
]


def chapter_seconds(times: dict[str, float] | None = None) -> list[float]:
    """Each chapter's notebooks' execution time, summed, from ``times`` (page -> seconds) or CHAPTER_TIMES."""
    if times is None:
        times = json.loads(CHAPTER_TIMES.read_text(encoding="utf-8"))["seconds"]
    return [
        sum(s for page, s in times.items() if any(page == p or page.startswith(p + "/") for p in chapter.pages))
        for chapter in CHAPTERS
    ]


def duration(seconds: float) -> str:
    """38 -> '38 s', 70 -> '1 min 10 s', 120 -> '2 min': how the map and the landing page write a time."""
    minutes, rest = divmod(round(seconds), 60)
    return " ".join([f"{minutes} min"] * bool(minutes) + [f"{rest} s"] * bool(rest or not minutes))


def landing_rows() -> list[str]:
    """The course map as the landing page's table, its text alternative: one Markdown row per chapter, four columns
    so that it fits a phone's screen (chapter, what the model adds, the exercise's number, run time)."""
    rows = []
    for c, seconds in zip(CHAPTERS, chapter_seconds()):
        name = f"{c.number}. {c.title}" if c.number else c.title
        rows.append(f"| {name} | {c.adds} | {c.number if c.exercise else '—'} | {duration(seconds)} |")
    return rows


def course_map():
    width, row = 56, 12.5
    height = row * len(CHAPTERS) + 7
    fig, ax = canvas(width, height, "The course at a glance")
    top = height - 6
    line(ax, [4.5, 4.5], [top - row / 2, top - row * (len(CHAPTERS) - 0.5)], color=MUTED, lw=2)
    for i, (chapter, seconds) in enumerate(zip(CHAPTERS, chapter_seconds())):
        y = top - row * (i + 0.5)
        ax.add_patch(plt.Circle((4.5, y), 2.4, fc=HIGHLIGHT if chapter.number else NORM, ec=LINE, lw=1, zorder=3))
        text(ax, 4.5, y, chapter.number or "•", size=11, weight="bold", zorder=4)
        box(ax, 31, y, 47, row - 1.6, fc=EMBED if chapter.number else "white", lw=0.8)
        text(ax, 9, y + 3.2, chapter.title, size=11, weight="bold", ha="left")
        text(ax, 9, y, chapter.adds, size=10, ha="left")
        if chapter.exercise:
            box(ax, 15, y - 3.3, 12, 2.6, chapter.exercise, fc=OUT, size=9.5, lw=0.6)
        text(
            ax,
            22.5 if chapter.exercise else 9,
            y - 3.3,
            f"notebooks run in {duration(seconds)}",
            size=9.5,
            color=MUTED,
            ha="left",
        )
    return fig


DIAGRAMS = {
    "course-map": course_map,
    "skipgram-negative-sampling": skipgram_negative_sampling,
    "hierarchical-softmax": hierarchical_softmax,
    "lstm-cell": lstm_cell,
    "elmo-stack": elmo_stack,
    "transformer-block": transformer_block,
    "multihead-reshape": multihead_reshape,
    "kv-cache": kv_cache,
    "bert-embeddings": bert_embeddings,
    "mlm-nsp-pipeline": mlm_nsp_pipeline,
    "mlm-concept": mlm_concept,
    "context-elmo": context_elmo,
    "context-gpt": context_gpt,
    "context-three": context_three,
    "finetuning-heads": finetuning_heads,
}


def draw_all(out_dir: Path = OUT_DIR) -> list[Path]:
    """Draw every diagram into ``out_dir`` as NAME.svg; return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with plt.rc_context(RC):
        for name, draw in DIAGRAMS.items():
            fig = draw()
            path = out_dir / f"{name}.svg"
            fig.savefig(path, format="svg", metadata=METADATA, facecolor="white")
            plt.close(fig)
            written.append(path)
    return written


if __name__ == "__main__":
    for path in draw_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT_DIR):
        print(path)
