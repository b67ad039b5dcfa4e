"""Train the course's BERT or ELMo on a GPU for a given time: the ``make checkpoints`` recipe at a size, with its steps
sized from a measured speed (issue 53).

    python -m word2bert.scripts.gpu_checkpoints --model bert --size course --train-seconds 300 --out runs/
    python -m word2bert.scripts.gpu_checkpoints --model elmo --size large --num-tokens 4000000 --out runs/

First two short runs of the recipe (``recipes.bert.train`` or ``recipes.elmo.train``) on a small text measure the
seconds one step takes at this size and batch on this device: the difference of the two runs' times over the
difference of their steps, so that building the data and the model does not count. From it, the steps (BERT) or
epochs (ELMo) that fill ``--train-seconds``. Then the full run: the recipe writes the checkpoint (fp16) and its model
card, and its probes; this script adds the plain sentences under the leave-one-out probe, the course's headline test,
and writes everything to ``OUT/NAME.json``: one point of the measured curve. bf16 autocast on CUDA is the loops'
own (``training.autocast``).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

from word2bert import bert, elmo
from word2bert.data import plain_sense_occurrences, pretraining_documents
from word2bert.probes import chance_level, leave_one_out_sense_probe
from word2bert.recipes import bert as bert_recipe
from word2bert.recipes import elmo as elmo_recipe
from word2bert.recipes.options import arguments

# Each size of each model; "course" is the committed checkpoint's shape.
SIZES = {
    "bert": {"course": dict(hidden=128, layers=4, heads=4), "wide": dict(hidden=256, layers=4, heads=4)},
    "elmo": {"course": dict(dim=128, cell_dim=256), "large": dict(dim=128, cell_dim=512)},
}
# The recipe of ``make checkpoints`` apart from the text's size, the steps and the batch.
RECIPE = {
    "bert": dict(vocab_size=8000, wordnet_fraction=0.0, eval_every=0, checkpoint_every=0),
    "elmo": dict(vocab_size=12000, wordnet_fraction=0.0),
}
RECIPES = {"bert": bert_recipe.BertRecipe, "elmo": elmo_recipe.ElmoRecipe}
LONG_COST = 2.0  # a step on 128 pieces against one on 64, for the last tenth of BERT's steps


def run(recipe) -> dict:
    """The recipe's run: its metrics."""
    return (bert_recipe if isinstance(recipe, bert_recipe.BertRecipe) else elmo_recipe).train(recipe)[1]


def timed(recipe) -> tuple[float, int]:
    """(seconds, steps) of one run of the recipe."""
    started = time.perf_counter()
    metrics = run(recipe)
    steps = len(metrics["losses"]) if isinstance(recipe, bert_recipe.BertRecipe) else metrics["steps"]
    return time.perf_counter() - started, steps


def seconds_per_step(base, tokens: int = 300_000) -> float:
    """One step's seconds at ``base``'s size and batch on its device: two short runs on ``tokens`` words, the
    difference of their times over the difference of their steps."""
    with tempfile.TemporaryDirectory() as tmp:
        short = replace(base, num_tokens=tokens, out=Path(tmp) / "x.safetensors", card=False)
        if isinstance(base, bert_recipe.BertRecipe):
            runs = [replace(short, steps=s, long_steps=0, warmup_steps=5) for s in (20, 80)]
        else:
            runs = [replace(short, epochs=e, probe_seeds=[]) for e in (0.2, 1.0)]
        (t1, s1), (t2, s2) = (timed(recipe) for recipe in runs)
    return max(t2 - t1, 1e-3) / max(s2 - s1, 1)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(SIZES), required=True)
    p.add_argument("--size", required=True, help="bert: course, wide; elmo: course, large")
    p.add_argument("--num-tokens", type=int, default=8_000_000, help="words of pre-training text")
    p.add_argument("--english-fraction", type=float, default=0.5)
    p.add_argument("--batch-size", type=int, default=None, help="default: 256 (BERT), 128 (ELMo)")
    p.add_argument("--train-seconds", type=float, default=300.0, help="the training's share of the time")
    p.add_argument("--device", default=None, help="cuda (default: the best available)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--calibration-tokens", type=int, default=300_000, help="words of the two timing runs' text")
    p.add_argument("--out", type=Path, required=True, help="a folder: NAME.safetensors, NAME.md, NAME.json")
    args = p.parse_args(argv)
    started = time.time()
    name = f"{args.model}-{args.size}-{args.num_tokens // 1_000_000}M-{args.english_fraction:g}"
    args.out.mkdir(parents=True, exist_ok=True)
    batch = args.batch_size or (256 if args.model == "bert" else 128)
    base = RECIPES[args.model](
        **RECIPE[args.model],
        **SIZES[args.model][args.size],
        english_fraction=args.english_fraction,
        batch_size=batch,
        seed=args.seed,
        device=args.device,
    )
    per_step = seconds_per_step(base, args.calibration_tokens)
    full = replace(base, num_tokens=args.num_tokens, out=args.out / f"{name}.safetensors")
    if args.model == "bert":
        steps = max(10, int(args.train_seconds / (per_step * (1 + LONG_COST / 10))))
        full = replace(full, steps=steps, long_steps=steps // 10, warmup_steps=min(1000, steps // 20), probes=True)
        full = replace(full, metrics=args.out / f"{name}.metrics.json")
        metrics = run(full)
        model = bert.load(full.out, "cpu")
    else:
        sentences = sum(len(d) for d in pretraining_documents(args.num_tokens, 0.0, args.seed, args.english_fraction))
        steps = max(10, int(args.train_seconds / per_step))
        full = replace(full, epochs=round(steps / math.ceil(sentences / batch), 3))
        metrics = run(full)
        metrics.pop("history", None)
        model = elmo.load(full.out, "cpu")
    model.eval()
    plain = plain_sense_occurrences()
    loo = leave_one_out_sense_probe(model, plain, "sense (plain sentences, leave one out)")
    result = {
        "name": name,
        "model": args.model,
        "size": args.size,
        "command": "python -m word2bert.scripts.gpu_checkpoints " + " ".join(argv or []),
        "script_argv": arguments(full),
        "device": str(metrics["device"]),
        "device_name": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "batch_size": batch,
        "seconds_per_step": per_step,
        "tokens_per_second": batch * 64 / per_step if args.model == "bert" else None,
        "parameters": metrics["parameters"],
        "final_train_loss": metrics["final_train_loss"],
        "minutes": (time.time() - started) / 60,
        "plain_leave_one_out": loo.mean,
        "plain_chance": chance_level(plain),
        "probes": metrics.get("probes", {}),
        "metrics": {k: v for k, v in metrics.items() if k not in ("losses", "probes", "eval_history")},
    }
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    print(name, "plain leave-one-out per layer:", [round(x, 3) for x in loo.mean], flush=True)
    return result


if __name__ == "__main__":
    main()
