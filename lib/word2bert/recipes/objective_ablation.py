"""The controlled objective ablation: one encoder trained three ways, all else the same (``word2bert.objectives``):
``python -m word2bert.scripts.objective_ablation``.

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

import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from .. import finetune as ft
from ..objectives import WORD_OBJECTIVES, WordObjective, save
from ..pretraining import eval_batches, evaluate_pretraining
from ..pretraining_data import MLM_ONLY, create_pretraining_instances
from ..probes import pos_probe, sense_probe
from .bert import BertRecipe
from .options import option
from .sentence_objectives import CHECKPOINTS, NLI, QA, loss_curve, pretrain_encoder, results_header, shorter_bert

RESULTS = CHECKPOINTS / "objective_ablation.json"
# chapter 5's settings for each task
FINETUNE = {
    "sentiment": ft.FinetuneConfig(n_train=400, n_test=200),
    "nli": NLI,
    "pos": ft.FinetuneConfig(n_train=400, n_test=200),
    "qa": QA,
}


@dataclass
class ObjectiveAblationRecipe:
    """Which objectives and seeds, pre-trained as ``bert`` says (the sentence-objective experiment's), where the
    results and seed 0's models go, and how many runs at once."""

    script: ClassVar[str] = "word2bert.scripts.objective_ablation"

    bert: BertRecipe = field(default_factory=shorter_bert)
    seeds: list[int] = option([0, 1, 2], "the runs' seeds")
    objectives: list[str] = option(list(WORD_OBJECTIVES), "the objectives", choices=list(WORD_OBJECTIVES))
    results: Path = option(RESULTS, "where the JSON results go")
    checkpoints: Path = option(CHECKPOINTS / "ablation", "where seed 0's models go")
    finetune: bool = option(True, "fine-tune on the four tasks (--no-finetune: only the probes)")
    jobs: int = option(1, "runs at once, each in its own process")


def checkpoint_path(objective: WordObjective, directory: Path = CHECKPOINTS / "ablation") -> Path:
    return directory / f"{objective.name.lower().replace(' ', '-')}.safetensors"


def probes(model) -> dict:
    """Per layer, the mean over the probes' three data seeds."""
    return {
        "sense_left": sense_probe(model, cue="left").mean,
        "sense_right": sense_probe(model, cue="right").mean,
        "pos": pos_probe(model).mean,
    }


def run(name: str, seed: int, recipe: ObjectiveAblationRecipe, data: tuple) -> dict:
    """Pre-train one encoder with objective ``name`` and ``seed``; its probes, fine-tuning and loss curve."""
    bert, device = recipe.bert, recipe.bert.device
    if bert.threads:
        torch.set_num_threads(bert.threads)
    objective, (tokenizer, train_ids, mlm_batches) = WORD_OBJECTIVES[name], data
    started = time.time()
    model, losses = pretrain_encoder(MLM_ONLY, seed, bert, tokenizer, train_ids, device, word=objective)
    minutes = (time.time() - started) / 60
    if seed == 0:
        save(model, objective, checkpoint_path(objective, recipe.checkpoints))
    tuned = {}
    if recipe.finetune:
        tuned = {task: ft.finetune(task, model.bert, c, seed, device).metrics for task, c in FINETUNE.items()}
    return {
        "objective": name,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "mlm_accuracy": evaluate_pretraining(model, mlm_batches, device)["mlm_accuracy"]
        if objective.mlm_probability
        else None,
        "probes": probes(model),
        "finetune": tuned,
        "loss_curve": loss_curve(losses),
        "pretraining_minutes": minutes,
        "minutes": (time.time() - started) / 60,
    }


def ablate(recipe: ObjectiveAblationRecipe) -> dict:
    """Every objective and seed of ``recipe`` (``jobs`` at once), written to ``recipe.results``; returns what it
    wrote."""
    if recipe.bert.threads:
        torch.set_num_threads(recipe.bert.threads)
    tokenizer, train_ids, eval_ids, words = recipe.bert.data(progress=False)
    held_out = create_pretraining_instances(eval_ids, recipe.bert.max_seq_length, 0, objective=MLM_ONLY)
    data = (tokenizer, train_ids, eval_batches(held_out, tokenizer))
    jobs = [(name, seed) for seed in recipe.seeds for name in recipe.objectives]
    with ProcessPoolExecutor(recipe.jobs) as pool:
        runs = list(pool.map(run, *zip(*jobs), *([x] * len(jobs) for x in (recipe, data))))
    baselines = {
        task: [ft.baseline(task, c.n_train, c.n_test, seed)[ft.TASKS[task].metric] for seed in recipe.seeds]
        for task, c in FINETUNE.items()
    }
    results = {
        **results_header(recipe, tokenizer, words, finetune={task: asdict(c) for task, c in FINETUNE.items()}),
        "baselines": baselines,
        "runs": runs,
    }
    recipe.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for r in runs:
        print(r["objective"], r["seed"], {k: [round(v, 3) for v in vs] for k, vs in r["probes"].items()})
    return results
