"""MLM alone, MLM + NSP and MLM + SOP, compared on the same data, encoder, steps and seeds (ALBERT's Table 5).

    python -m word2bert.scripts.sentence_objectives --threads 1      # the committed results (CPU, ~30 min)

For each seed and objective a fresh BERT of the course's size is pre-trained on the course's text (the committed
checkpoint's documents and WordPiece vocabulary, shorter instances and fewer steps), then measured on held-out
documents: MLM accuracy on consecutive text; the [CLS] classifier's accuracy on NSP pairs (B from a random other
document) and on SOP pairs (A and B swapped), whichever it was trained on; and fine-tuning on NLI and QA, as
chapter 5 does. The results, curves included, go to ``checkpoints/sentence_objectives.json``, which chapter 4's
pre-training page reads (its hidden asserts check what it says of them) and ``tests/test_objective_ablation.py``
re-measures (MLM alone from seed 0, which is also the objective ablation's MLM).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch

from word2bert import finetune as ft
from word2bert.bert import BertForPreTraining
from word2bert.objectives import MLM
from word2bert.pretraining import PretrainConfig, eval_batches, evaluate_pretraining, pretrain
from word2bert.pretraining_data import MLM_ONLY, NSP, SOP, SentenceObjective, create_pretraining_instances
from word2bert.scripts import pretrain_bert
from word2bert.training import TrainConfig

RESULTS = Path(__file__).resolve().parent.parent / "checkpoints" / "sentence_objectives.json"
OBJECTIVES = {o.name: o for o in (MLM_ONLY, NSP, SOP)}
# pretrain_bert's data, model and phases (64-piece instances, then 128), with a third of its steps
STEPS = ["--steps", "1000", "--long-steps", "100", "--warmup-steps", "100"]
# chapter 5's settings: NLI as the sentence-classification page, QA as the question-answering page
NLI = ft.FinetuneConfig(n_train=400, n_test=200)
QA = ft.FinetuneConfig(n_train=400, n_test=150, steps=150, dropout=0.0)


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, argparse.Namespace]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--objectives", nargs="+", default=list(OBJECTIVES), choices=list(OBJECTIVES))
    p.add_argument("--results", type=Path, default=RESULTS, help="where the JSON results go")
    p.add_argument("--no-finetune", action="store_true", help="only the pre-training measurements")
    own, rest = p.parse_known_args(argv)
    return own, pretrain_bert.parse_args(STEPS + rest)


def pretrain_encoder(
    objective: SentenceObjective, seed: int, args: argparse.Namespace, tokenizer, train_ids, device, word=MLM
) -> tuple[BertForPreTraining, list[float]]:
    """A fresh BERT-sized model pre-trained with ``word`` (MLM unless told, or another of ``objectives``) and the
    sentence ``objective``, from ``seed``, in the committed checkpoint's phases with fewer steps; its losses."""
    torch.manual_seed(seed)
    model = word.model(pretrain_bert.bert_config(args, tokenizer), tokenizer)
    losses = []
    for i, (length, steps) in enumerate(pretrain_bert.phases(args)):
        instances = create_pretraining_instances(train_ids, length, seed + i, objective=objective)
        warmup_steps = args.warmup_steps if i == 0 else max(1, steps // 10)
        train_config = PretrainConfig(
            train=TrainConfig(
                steps=steps, lr=args.lr, warmup_steps=warmup_steps, schedule="linear", threads=args.threads
            ),
            batch_size=args.batch_size,
            mlm_probability=word.mlm_probability,
            eval_every=0,
            seed=seed + i,
            objective=objective,
            loss=word.loss,
        )
        losses += pretrain(model, instances, tokenizer, train_config, device=device).losses
    return model.eval(), losses


def loss_curve(losses: list[float], points: int = 40) -> list[float]:
    """The training losses averaged over ``points`` consecutive windows, for the committed results."""
    every = max(1, len(losses) // points)
    return [sum(losses[i : i + every]) / len(losses[i : i + every]) for i in range(0, len(losses), every)]


def run(objective: SentenceObjective, seed: int, args: argparse.Namespace, data: tuple, device, tune=True) -> dict:
    """Pre-train one BERT with ``objective`` and ``seed``; its held-out measurements and loss curve."""
    tokenizer, train_ids, held_out = data
    started = time.time()
    model, losses = pretrain_encoder(objective, seed, args, tokenizer, train_ids, device)
    scores = {task: evaluate_pretraining(model, batches, device)[key] for task, (key, batches) in held_out.items()}
    pretraining_minutes = (time.time() - started) / 60
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


def main(argv: list[str] | None = None) -> dict:
    own, args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer, train_ids, eval_ids, words = pretrain_bert.build_data(args, progress=False)
    held_out = {
        task: (
            key,
            eval_batches(create_pretraining_instances(eval_ids, args.max_seq_length, 0, objective=o), tokenizer),
        )
        for task, key, o in [
            ("mlm", "mlm_accuracy", MLM_ONLY),
            ("nsp", "nsp_accuracy", NSP),
            ("sop", "nsp_accuracy", SOP),
        ]
    }
    runs = [
        run(OBJECTIVES[name], seed, args, (tokenizer, train_ids, held_out), args.device, not own.no_finetune)
        for seed in own.seeds
        for name in own.objectives
    ]
    results = {
        **pretrain_bert.experiment_header(
            "word2bert.scripts.sentence_objectives",
            argv,
            args,
            tokenizer,
            words,
            max_seq_length=args.max_seq_length,
            held_out_pairs={task: sum(len(b["input_ids"]) for b in batches) for task, (_, batches) in held_out.items()},
            finetune={"nli": asdict(NLI), "qa": asdict(QA)},
        ),
        "runs": runs,
    }
    own.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for r in runs:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items() if k != "loss_curve"})
    return results


if __name__ == "__main__":
    main()
