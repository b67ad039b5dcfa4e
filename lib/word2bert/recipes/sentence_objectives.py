"""MLM alone, MLM + NSP and MLM + SOP, compared on the same data, encoder, steps and seeds (ALBERT's Table 5):
``python -m word2bert.scripts.sentence_objectives``.

For each seed and objective a fresh BERT of the course's size is pre-trained on the course's text (the committed
checkpoint's documents and WordPiece vocabulary, shorter instances and fewer steps), then measured on held-out
documents: MLM accuracy on consecutive text; the [CLS] classifier's accuracy on NSP pairs (B from a random other
document) and on SOP pairs (A and B swapped), whichever it was trained on; and fine-tuning on NLI and QA, as
chapter 5 does. The results, curves included, go to ``checkpoints/sentence_objectives.json``, which chapter 4's
pre-training page reads (its hidden asserts check what it says of them) and ``tests/test_objective_ablation.py``
re-measures (MLM alone from seed 0, which is also the objective ablation's MLM).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from .. import finetune as ft
from ..bert import BertForPreTraining
from ..objectives import MLM, WordObjective
from ..pretraining import eval_batches, evaluate_pretraining
from ..pretraining_data import MLM_ONLY, NSP, SOP, SentenceObjective, create_pretraining_instances
from ..wordpiece import WordPieceTokenizer
from .bert import BertRecipe, pretrain_in_phases
from .options import command, option

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
RESULTS = CHECKPOINTS / "sentence_objectives.json"
OBJECTIVES = {o.name: o for o in (MLM_ONLY, NSP, SOP)}
# chapter 5's settings: NLI as the sentence-classification page, QA as the question-answering page
NLI = ft.FinetuneConfig(n_train=400, n_test=200)
QA = ft.FinetuneConfig(n_train=400, n_test=150, steps=150, dropout=0.0)


def shorter_bert() -> BertRecipe:
    """The course BERT's data, model and phases (64-piece instances, then 128), with a third of its steps."""
    return BertRecipe(steps=1000, long_steps=100, warmup_steps=100)


@dataclass
class SentenceObjectivesRecipe:
    """Which objectives and seeds, pre-trained as ``bert`` says, and where the results go."""

    script: ClassVar[str] = "word2bert.scripts.sentence_objectives"

    bert: BertRecipe = field(default_factory=shorter_bert)
    seeds: list[int] = option([0, 1, 2], "the runs' seeds")
    objectives: list[str] = option(list(OBJECTIVES), "the sentence objectives", choices=list(OBJECTIVES))
    results: Path = option(RESULTS, "where the JSON results go")
    finetune: bool = option(True, "fine-tune on NLI and QA (--no-finetune: only the pre-training measurements)")


def pretrain_encoder(
    objective: SentenceObjective,
    seed: int,
    recipe: BertRecipe,
    tokenizer: WordPieceTokenizer,
    train_ids: list,
    device=None,
    word: WordObjective = MLM,
) -> tuple[BertForPreTraining, list[float]]:
    """A fresh BERT-sized model pre-trained with ``word`` (MLM unless told, or another of ``objectives``) and the
    sentence ``objective``, from ``seed``, in ``recipe``'s phases; its losses."""
    torch.manual_seed(seed)
    model = word.model(recipe.model_config(tokenizer), tokenizer)
    phases = pretrain_in_phases(
        model,
        recipe,
        tokenizer,
        train_ids,
        device,
        seed=seed,
        objective=objective,
        loss=word.loss,
        mlm_probability=word.mlm_probability,
    )
    return model.eval(), [loss for phase in phases for loss in phase.result.losses]


def loss_curve(losses: list[float], points: int = 40) -> list[float]:
    """The training losses averaged over ``points`` consecutive windows, for the committed results."""
    every = max(1, len(losses) // points)
    return [sum(losses[i : i + every]) / len(losses[i : i + every]) for i in range(0, len(losses), every)]


def results_header(recipe, tokenizer: WordPieceTokenizer, words: int, **more) -> dict:
    """What an experiment's results file opens with: the command that wrote it, and the pre-training settings its
    runs share (``more`` adds the experiment's own)."""
    return {"command": command(recipe.script, recipe), "settings": {**recipe.bert.settings(tokenizer, words), **more}}


def run(objective: SentenceObjective, seed: int, recipe: SentenceObjectivesRecipe, data: tuple) -> dict:
    """Pre-train one BERT with ``objective`` and ``seed``; its held-out measurements and loss curve."""
    tokenizer, train_ids, held_out = data
    device = recipe.bert.device
    started = time.time()
    model, losses = pretrain_encoder(objective, seed, recipe.bert, tokenizer, train_ids, device)
    scores = {task: evaluate_pretraining(model, batches, device)[key] for task, (key, batches) in held_out.items()}
    pretraining_minutes = (time.time() - started) / 60
    tune = recipe.finetune
    nli = ft.finetune("nli", model.bert, NLI, seed, device).metrics if tune else {"accuracy": None}
    qa = ft.finetune("qa", model.bert, QA, seed, device).metrics if tune else {"exact_match": None, "span_f1": None}
    return {
        "objective": objective.name,
        "seed": seed,
        "mlm_accuracy": scores["mlm"],
        "nsp_accuracy": scores["nsp"] if objective.trained else None,  # an untrained head says nothing
        "sop_accuracy": scores["sop"] if objective.trained else None,
        "nli_accuracy": nli["accuracy"],
        "qa_exact_match": qa["exact_match"],
        "qa_f1": qa["span_f1"],
        "loss_curve": loss_curve(losses),
        "pretraining_minutes": pretraining_minutes,
        "minutes": (time.time() - started) / 60,
    }


def compare(recipe: SentenceObjectivesRecipe) -> dict:
    """Every objective and seed of ``recipe``, written to ``recipe.results``; returns what it wrote."""
    if recipe.bert.threads:
        torch.set_num_threads(recipe.bert.threads)
    tokenizer, train_ids, eval_ids, words = recipe.bert.data(progress=False)
    max_length = recipe.bert.max_seq_length
    held_out = {
        task: (key, eval_batches(create_pretraining_instances(eval_ids, max_length, 0, objective=o), tokenizer))
        for task, key, o in [
            ("mlm", "mlm_accuracy", MLM_ONLY),
            ("nsp", "nsp_accuracy", NSP),
            ("sop", "nsp_accuracy", SOP),
        ]
    }
    data = (tokenizer, train_ids, held_out)
    runs = [run(OBJECTIVES[name], seed, recipe, data) for seed in recipe.seeds for name in recipe.objectives]
    results = {
        **results_header(
            recipe,
            tokenizer,
            words,
            max_seq_length=max_length,
            held_out_pairs={task: sum(len(b["input_ids"]) for b in batches) for task, (_, batches) in held_out.items()},
            finetune={"nli": asdict(NLI), "qa": asdict(QA)},
        ),
        "runs": runs,
    }
    recipe.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for r in runs:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items() if k != "loss_curve"})
    return results
