"""What the three training scripts share: the options every run has, and writing the model card."""

from __future__ import annotations

import argparse
from pathlib import Path


def make_parser(doc: str | None, checkpoint: Path, num_tokens: int) -> tuple[argparse.ArgumentParser, dict]:
    """A parser with the shared options, and its groups ("data", "model", "training", "output") for each
    script to add its own: words of text and the WordNet share; seed, device and CPU threads; the checkpoint
    path and ``--no-card``."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = {name: p.add_argument_group(name) for name in ("data", "model", "training", "output")}
    groups["data"].add_argument("--num-tokens", type=int, default=num_tokens, help="words of pre-training text")
    groups["data"].add_argument("--wordnet-fraction", type=float, default=0.25,
                                help="share of WordNet glosses and examples")
    groups["training"].add_argument("--seed", type=int, default=0)
    groups["training"].add_argument("--device", default=None, help="cuda, mps or cpu (default: the best available)")
    groups["training"].add_argument("--threads", type=int, default=None,
                                    help="CPU threads (1 is fastest on a machine whose cores other jobs share)")
    groups["output"].add_argument("--out", type=Path, default=checkpoint, help="the checkpoint (.safetensors)")
    groups["output"].add_argument("--no-card", action="store_true", help="do not write the model card")
    return p, groups


def save_card(checkpoint: str | Path, lines: list[str]) -> Path:
    """The model card, next to the checkpoint with the suffix ``.md``."""
    path = Path(checkpoint).with_suffix(".md")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
