"""The controlled objective ablation: one encoder trained three ways, all else the same (``word2bert.objectives``).

    python -m word2bert.scripts.objective_ablation --threads 1 --jobs 2   # the committed results (CPU, ~30 min)

For each seed and objective (a left-to-right LM, MLM, a two-tower biLM) a fresh encoder of the course BERT's size
is pre-trained exactly as ``sentence_objectives`` trains "MLM alone": the same documents, WordPiece vocabulary,
instances of consecutive text, batches, phases and steps, so its MLM model is that experiment's. Then, per layer:
the toy world's sense probe on held-out templates, split by whether the deciding word stands before the ambiguous
word (left cue) or after it (right cue), and the POS probe; and fine-tuning on the four tasks with chapter 5's
settings, against each task's baseline. The results go to ``checkpoints/objective_ablation.json``, which the
comparison chapter reads; seed 0's models are kept in half precision in ``checkpoints/ablation/``.
``tests/test_objective_ablation.py`` re-measures one run and the kept models.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

import torch

from word2bert import finetune as ft
from word2bert.objectives import WORD_OBJECTIVES, WordObjective, save
from word2bert.pretraining import eval_batches, evaluate_pretraining
from word2bert.pretraining_data import MLM_ONLY, create_pretraining_instances
from word2bert.probes import pos_probe, sense_probe
from word2bert.scripts import pretrain_bert, sentence_objectives

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
RESULTS = CHECKPOINTS / "objective_ablation.json"
# chapter 5's settings for each task
FINETUNE = {
    "sentiment": ft.FinetuneConfig(n_train=400, n_test=200),
    "nli": sentence_objectives.NLI,
    "pos": ft.FinetuneConfig(n_train=400, n_test=200),
    "qa": sentence_objectives.QA,
}


def checkpoint_path(objective: WordObjective, directory: Path = CHECKPOINTS / "ablation") -> Path:
    return directory / f"{objective.name.lower().replace(' ', '-')}.safetensors"


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, argparse.Namespace]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--objectives", nargs="+", default=list(WORD_OBJECTIVES), choices=list(WORD_OBJECTIVES))
    p.add_argument("--results", type=Path, default=RESULTS, help="where the JSON results go")
    p.add_argument("--checkpoints", type=Path, default=CHECKPOINTS / "ablation", help="where seed 0's models go")
    p.add_argument("--no-finetune", action="store_true", help="only the probes")
    p.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own process")
    own, rest = p.parse_known_args(argv)
    return own, pretrain_bert.parse_args(sentence_objectives.STEPS + rest)


def probes(model) -> dict:
    """Per layer, the mean over the probes' three data seeds."""
    return {
        "sense_left": sense_probe(model, cue="left").mean,
        "sense_right": sense_probe(model, cue="right").mean,
        "pos": pos_probe(model).mean,
    }


def run(name: str, seed: int, own: argparse.Namespace, args: argparse.Namespace, data: tuple) -> dict:
    """Pre-train one encoder with objective ``name`` and ``seed``; its probes, fine-tuning and loss curve."""
    if args.threads:
        torch.set_num_threads(args.threads)
    objective, (tokenizer, train_ids, mlm_batches) = WORD_OBJECTIVES[name], data
    started = time.time()
    model, losses = sentence_objectives.pretrain_encoder(
        MLM_ONLY, seed, args, tokenizer, train_ids, args.device, word=objective
    )
    minutes = (time.time() - started) / 60
    if seed == 0:
        save(model, objective, checkpoint_path(objective, own.checkpoints))
    tuned = {}
    if not own.no_finetune:
        tuned = {task: ft.finetune(task, model.bert, c, seed, args.device).metrics for task, c in FINETUNE.items()}
    return {
        "objective": name,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "mlm_accuracy": evaluate_pretraining(model, mlm_batches, args.device)["mlm_accuracy"]
        if objective.mlm_probability
        else None,
        "probes": probes(model),
        "finetune": tuned,
        "loss_curve": sentence_objectives.loss_curve(losses),
        "pretraining_minutes": minutes,
        "minutes": (time.time() - started) / 60,
    }


def main(argv: list[str] | None = None) -> dict:
    own, args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer, train_ids, eval_ids, words = pretrain_bert.build_data(args, progress=False)
    held_out = create_pretraining_instances(eval_ids, args.max_seq_length, 0, objective=MLM_ONLY)
    data = (tokenizer, train_ids, eval_batches(held_out, tokenizer))
    jobs = [(name, seed) for seed in own.seeds for name in own.objectives]
    with ProcessPoolExecutor(own.jobs) as pool:
        runs = list(pool.map(run, *zip(*jobs), *([x] * len(jobs) for x in (own, args, data))))
    baselines = {
        task: [ft.baseline(task, c.n_train, c.n_test, seed)[ft.TASKS[task].metric] for seed in own.seeds]
        for task, c in FINETUNE.items()
    }
    results = {
        **pretrain_bert.experiment_header(
            "word2bert.scripts.objective_ablation",
            argv,
            args,
            tokenizer,
            words,
            finetune={task: asdict(c) for task, c in FINETUNE.items()},
        ),
        "baselines": baselines,
        "runs": runs,
    }
    own.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for r in runs:
        print(r["objective"], r["seed"], {k: [round(v, 3) for v in vs] for k, vs in r["probes"].items()})
    return results


if __name__ == "__main__":
    main()
