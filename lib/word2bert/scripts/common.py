"""What the three training scripts share: the options every run has, and the model card's writer."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from word2bert.data.english import LICENCES


def make_parser(doc: str | None, checkpoint: Path, num_tokens: int) -> tuple[argparse.ArgumentParser, dict]:
    """A parser with the shared options, and its groups ("data", "model", "training", "output") for each
    script to add its own: words of text and the WordNet share; seed, device and CPU threads; the checkpoint
    path and ``--no-card``."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = {name: p.add_argument_group(name) for name in ("data", "model", "training", "output")}
    groups["data"].add_argument("--num-tokens", type=int, default=num_tokens, help="words of pre-training text")
    groups["data"].add_argument(
        "--wordnet-fraction", type=float, default=0.25, help="share of WordNet glosses and examples"
    )
    groups["data"].add_argument(
        "--english-fraction",
        type=float,
        default=0.0,
        help="share of ordinary English (WordNet, GCIDE, fortunes: word2bert.data.english)",
    )
    groups["training"].add_argument("--seed", type=int, default=0)
    groups["training"].add_argument("--device", default=None, help="cuda, mps or cpu (default: the best available)")
    groups["training"].add_argument(
        "--threads", type=int, default=None, help="CPU threads (1 is fastest on a machine whose cores other jobs share)"
    )
    groups["output"].add_argument("--out", type=Path, default=checkpoint, help="the checkpoint (.safetensors)")
    groups["output"].add_argument("--no-card", action="store_true", help="do not write the model card")
    return p, groups


def text_source(args: argparse.Namespace) -> str:
    """The model card's words for the pre-training text that ``--num-tokens``, ``--wordnet-fraction``,
    ``--english-fraction`` and ``--seed`` chose: the call that builds it, and what is in it."""
    call = (
        f"`word2bert.data.pretraining_documents({args.num_tokens}, wordnet_fraction={args.wordnet_fraction}, "
        f"seed={args.seed}, english_fraction={args.english_fraction})`"
    )
    parts = ["the toy world's training templates"]
    if args.wordnet_fraction:
        parts.append(f"{args.wordnet_fraction:.0%} WordNet 3.0 glosses and usage examples, benchmark ones included")
    if args.english_fraction:
        parts.append(
            f"{args.english_fraction:.0%} ordinary English from WordNet, GCIDE and fortune (`word2bert.data.english`: "
            f"cleaned, near-duplicates dropped, the real-English sense benchmark held out; licences: "
            f"{', '.join(LICENCES)}, as the book's licences page records)"
        )
    # a source whose Debian package is missing gives no text, and the toy world fills its share
    return f"{call}: " + ", ".join(parts) + "; the toy world fills the share of any source not installed"


def save_card(
    checkpoint: str | Path,
    *,
    name: str,
    summary: str,
    data: list[str],
    config: Any,
    parameters: int,
    configuration: list[str],
    script: str,
    argv: list[str],
    metrics: list[str],
    metrics_title: str = "Metrics",
    probes: dict[str, dict] | None = None,
    notes: Sequence[str] = (),
    world_size: int = 1,
) -> Path:
    """The model card, next to the checkpoint with the suffix ``.md``: every card's sections (data, configuration,
    the command that made the checkpoint, metrics, notes) filled with what a script says of its own model.

    ``data``, ``configuration`` and ``metrics`` are bullets; the configuration opens with the model's ``config``,
    its parameters and the checkpoint's size. ``probes`` maps a probe's label to its per-layer ``mean`` and
    ``std``, listed after the metrics; ``notes`` are paragraphs after them. A ``## Changes`` section that ends the
    card already there (the checkpoint's history, written by hand) is kept at the end. The command is
    ``python -m script`` with ``argv``, or ``torchrun`` on ``world_size`` processes.
    """
    checkpoint = Path(checkpoint)
    launcher = f"torchrun --nproc_per_node {world_size}" if world_size > 1 else "python"
    command = " ".join([launcher, "-m", script, *map(shlex.quote, argv)])
    megabytes = checkpoint.stat().st_size / 1e6
    lines = [
        f"# Model card: the course's small {name} (`{checkpoint.name}`)",
        "",
        summary,
        "",
        "## Data",
        *(f"- {line}" for line in data),
        "",
        "## Configuration",
        f"- Model: `{config}`, {parameters:,} parameters, {megabytes:.1f} MB.",
        *(f"- {line}" for line in configuration),
        "",
        "## Command",
        "```bash",
        command,
        "```",
        "",
        f"## {metrics_title}",
        *(f"- {line}" for line in metrics),
    ]
    for label, p in (probes or {}).items():
        cells = ", ".join(f"L{i} {m:.3f} ± {s:.3f}" for i, (m, s) in enumerate(zip(p["mean"], p["std"])))
        lines.append(f"- {label}: {cells}")
    for note in notes:
        lines += ["", note]
    path = checkpoint.with_suffix(".md")
    # The card's history (CHANGELOG.md in brief) is not the run's to write: a new run keeps it.
    changes = re.search(r"^## Changes\n.*", path.read_text(encoding="utf-8"), re.M | re.S) if path.exists() else None
    if changes:
        lines += ["", changes.group().rstrip()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
