"""Pre-train the course's small BERT on the toy world, WordNet and ordinary English: WordPiece vocabulary, MLM + NSP,
model card.

    python -m word2bert.scripts.pretrain_bert --threads 1 --probes       # a small BERT on the toy world (CPU, 6 min)
    python -m word2bert.scripts.pretrain_bert --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
        --english-fraction 0.5 --wordnet-fraction 0 --steps 27000 --long-steps 2700 --eval-every 0
                                                                        # the committed checkpoint (CPU, 52 min)
    torchrun --nproc_per_node 2 -m word2bert.scripts.pretrain_bert ...   # the same, data-parallel on 2 ranks

The defaults are the course's first recipe (3,000 pieces, 400k words, a quarter of them WordNet's, 3,300 steps); the
committed checkpoint's command is the second line, chosen from the curve of ``word2bert.scripts.english_curve``.

Every rank builds the same vocabulary and instances from the same seed; rank 0 writes the checkpoint, its model
card (``bert.md`` next to it) and, with ``--metrics``, a JSON file of the results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from word2bert import bert
from word2bert.bert import BertConfig, BertForPreTraining, count_parameters
from word2bert.data import pretraining_documents
from word2bert.pretraining import PretrainConfig, pretrain
from word2bert.pretraining_data import create_pretraining_instances, tokenize_documents
from word2bert.scripts.common import make_parser, save_card, text_source
from word2bert.training import TrainConfig, init_distributed
from word2bert.wordpiece import WordPieceTokenizer


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p, groups = make_parser(__doc__, bert.CHECKPOINT, num_tokens=400_000)
    data, model, train, out = groups.values()
    data.add_argument("--eval-fraction", type=float, default=0.03, help="documents held out for MLM/NSP accuracy")
    data.add_argument("--vocab-size", type=int, default=3000, help="WordPiece vocabulary size")
    data.add_argument("--max-seq-length", type=int, default=128, help="pieces per instance in the last phase")
    data.add_argument("--short-seq-length", type=int, default=64, help="pieces per instance before that")
    data.add_argument("--dupe-factor", type=int, default=1, help="passes over the documents making NSP pairs")
    model.add_argument("--layers", type=int, default=4)
    model.add_argument("--hidden", type=int, default=128)
    model.add_argument("--heads", type=int, default=4)
    train.add_argument("--steps", type=int, default=3000, help="steps on short instances")
    train.add_argument("--long-steps", type=int, default=300, help="then steps on instances of --max-seq-length")
    train.add_argument("--batch-size", type=int, default=16, help="global batch, split over the ranks")
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--warmup-steps", type=int, default=300)
    train.add_argument("--whole-word-mask", action="store_true")
    train.add_argument("--eval-every", type=int, default=500)
    train.add_argument("--checkpoint-every", type=int, default=1000)
    train.add_argument("--dropout", type=float, default=0.0)
    out.add_argument("--metrics", type=Path, default=None, help="also write the results as JSON here")
    out.add_argument("--probes", action="store_true", help="score the sense and POS probes for the model card")
    args = p.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)  # the card's command
    return args


def split_documents(args: argparse.Namespace) -> tuple[list, list]:
    """(training documents, held-out documents) of the pre-training text."""
    docs = pretraining_documents(args.num_tokens, args.wordnet_fraction, args.seed, args.english_fraction)
    n_eval = max(2, int(len(docs) * args.eval_fraction))
    return docs[n_eval:], docs[:n_eval]


def build_data(args: argparse.Namespace, progress: bool = True):
    """The WordPiece tokenizer, the training and held-out documents as piece ids, and the training words."""
    train_docs, eval_docs = split_documents(args)
    tokenizer = WordPieceTokenizer.train(
        (" ".join(s) for d in train_docs for s in d), args.vocab_size, progress=progress
    )
    words = sum(len(s) for d in train_docs for s in d)
    return tokenizer, tokenize_documents(tokenizer, train_docs), tokenize_documents(tokenizer, eval_docs), words


def bert_config(args: argparse.Namespace, tokenizer: WordPieceTokenizer) -> BertConfig:
    """The model's size from the options: BERT's shape (4x wide feed-forward), positions up to the longest phase."""
    return BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        max_position_embeddings=args.max_seq_length,
        dropout=args.dropout,
    )


def phases(args: argparse.Namespace) -> list[tuple[int, int]]:
    """(sequence length, steps) of each phase. As BERT (90% of the steps at 128 pieces, then 512), most steps use
    short instances, which cost less; the last ones teach the remaining position embeddings."""
    if args.long_steps and args.short_seq_length < args.max_seq_length:
        return [(args.short_seq_length, args.steps), (args.max_seq_length, args.long_steps)]
    return [(args.max_seq_length, args.steps)]


def experiment_header(script: str, argv: list[str] | None, args: argparse.Namespace, tokenizer, words: int, **more):
    """What an experiment's results file opens with: the command that wrote it, and the pre-training settings
    its runs share (``more`` adds the experiment's own)."""
    return {
        "command": " ".join([f"python -m {script}", *(sys.argv[1:] if argv is None else argv)]),
        "settings": {
            "train_words": words,
            "vocab_size": tokenizer.vocab_size,
            "phases": phases(args),
            "batch_size": args.batch_size,
            "layers": args.layers,
            "hidden": args.hidden,
            **more,
        },
    }


def held_out_instances(args: argparse.Namespace, tokenizer: WordPieceTokenizer, eval_ids=None) -> list:
    """The NSP instances of the held-out documents at the final length, on which the card's accuracies are
    measured."""
    if eval_ids is None:
        eval_ids = tokenize_documents(tokenizer, split_documents(args)[1])
    return create_pretraining_instances(eval_ids, args.max_seq_length, args.seed)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world_size, device = init_distributed(args.device)
    started = time.time()
    tokenizer, train_ids, eval_ids, num_words = build_data(args, progress=rank == 0)
    config = bert_config(args, tokenizer)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = BertForPreTraining(config, tokenizer)
    evals, losses, train_configs, num_instances = [], [], [], []

    def save(model: BertForPreTraining) -> None:  # half the bytes, and the same scores as in full precision
        bert.save(model, args.out, torch.float16)

    for i, (length, steps) in enumerate(phases(args)):
        train = create_pretraining_instances(train_ids, length, args.seed + i, dupe_factor=args.dupe_factor)
        held_out = create_pretraining_instances(eval_ids, length, args.seed)
        warmup_steps = args.warmup_steps if i == 0 else max(1, steps // 10)
        train_config = PretrainConfig(
            train=TrainConfig(
                steps=steps, lr=args.lr, warmup_steps=warmup_steps, schedule="linear", threads=args.threads
            ),
            batch_size=args.batch_size,
            whole_word_mask=args.whole_word_mask,
            eval_every=args.eval_every,
            checkpoint_every=args.checkpoint_every,
            seed=args.seed + i,
        )
        result = pretrain(model, train, tokenizer, train_config, held_out, device, save)
        evals += [{**e, "step": e["step"] + len(losses), "seq_length": length} for e in result.evals]
        losses += result.losses
        train_configs.append(train_config)
        num_instances.append(len(train))
    metrics = {
        "world_size": world_size,
        "device": str(device),
        "final_train_loss": result.final_loss,
        "eval": evals[-1] if evals else {},
        "eval_history": evals,
        "losses": losses,
        "parameter_digests": result.parameter_digests,
        "parameters": count_parameters(model),
        "train_instances": num_instances,
        "eval_instances": len(held_out),
        "train_words": num_words,
        "vocab_size": tokenizer.vocab_size,
        "minutes": (time.time() - started) / 60,
    }
    if rank == 0:
        if args.probes:
            from word2bert.probes import english_probes, pos_probe, sense_probe

            model.eval()
            results = [sense_probe(model), pos_probe(model), *english_probes(model)]
            metrics["probes"] = {p.name: {"mean": p.mean, "std": p.std, "seeds": len(p.scores)} for p in results}
        if args.metrics:
            args.metrics.write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        if not args.no_card:
            write_card(args, config, train_configs, metrics)
        print(json.dumps({k: metrics[k] for k in ("final_train_loss", "eval", "world_size")}))
    if dist.is_initialized():
        dist.destroy_process_group()
    return metrics


def write_card(args: argparse.Namespace, config: BertConfig, train_configs: list, metrics: dict) -> Path:
    """``bert.md`` next to the checkpoint: data, configuration, the exact command, metrics."""
    e = metrics["eval"]
    return save_card(
        args.out,
        name="BERT",
        summary=(
            "Loaded by `word2bert.bert.pretrained()`: a `BertForPreTraining` (encoder, pooler, MLM and NSP heads) "
            "with its WordPiece vocabulary in the checkpoint's metadata. For teaching only."
        ),
        data=[
            f"{metrics['train_words']:,} words of training documents from {text_source(args)}; "
            f"{args.eval_fraction:.0%} of the documents held out for the accuracies below.",
            f"WordPiece vocabulary of {metrics['vocab_size']} pieces trained on the training documents.",
            f"NSP instances per phase (max. pieces: count): "
            f"{', '.join(f'{n}: {c:,}' for (n, _), c in zip(phases(args), metrics['train_instances']))}; dupe "
            f"factor {args.dupe_factor}; masked afresh for every batch (15%, 80/10/10"
            f"{', whole words' if args.whole_word_mask else ''}).",
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            *(f"Phase {i + 1}, {n} pieces: `{c}`" for i, ((n, _), c) in enumerate(zip(phases(args), train_configs))),
            "AdamW with weight-decay groups, linear warm-up then linear decay in each phase, gradient clipping at 1.0.",
            f"Ran on {metrics['world_size']} process(es), device `{metrics['device']}`, "
            f"in {metrics['minutes']:.1f} min.",
        ],
        script="word2bert.scripts.pretrain_bert",
        argv=args.argv,
        world_size=metrics["world_size"],
        metrics_title=f"Metrics (held-out documents, {args.max_seq_length} pieces, fixed masks)",
        metrics=[
            f"Final training loss (mean of the last 10% of the last phase's steps): {metrics['final_train_loss']:.3f}",
            f"Held-out loss (MLM + NSP): {e.get('loss', float('nan')):.3f}",
            f"MLM accuracy: {e.get('mlm_accuracy', float('nan')):.3f}",
            f"NSP accuracy: {e.get('nsp_accuracy', float('nan')):.3f}",
        ],
        probes={
            f"Probe, {name} ({p['seeds']} seeds or halvings, per layer)": p
            for name, p in metrics.get("probes", {}).items()
        },
        notes=[
            "Re-running the command on a CPU reproduces the MLM and NSP accuracies within ±0.02 and the held-out "
            "loss within ±0.1; the probes, which fit a classifier on the model's vectors, within ±0.05 per layer. "
            "Thread counts and optimizer kernels change the order of floating-point sums, and the run drifts from "
            "there."
        ],
    )


if __name__ == "__main__":
    main()
