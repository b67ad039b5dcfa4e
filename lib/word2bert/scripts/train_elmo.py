"""Train the course's small ELMo on the toy world, WordNet and ordinary English: word vocabulary, biLM loss, probes,
model card.

    python -m word2bert.scripts.train_elmo --threads 1    # a small ELMo on the toy world (CPU, a few minutes)
    python -m word2bert.scripts.train_elmo --num-tokens 1000000 --english-fraction 0.5 --wordnet-fraction 0 \
        --vocab-size 12000 --epochs 5       # the committed checkpoint (4 min on a GPU, 66 on 2 CPU cores)
    python -m word2bert.scripts.train_elmo --num-tokens 5000 --epochs 1 --dim 16 --out /tmp/elmo.safetensors

The defaults are the course's first recipe (300,000 words, a quarter of them WordNet's, 2 epochs); the committed
checkpoint's command is the second line: the English mixture of the committed GPT and BERT, read five times.

Every sentence is read as ``<s> words </s>``. The softmax predicts words of a vocabulary built from the training
text (rarer words become ``<unk>``); the character encoder reads any word. Perplexity is scored on documents
written from the toy world's held-out templates (sentences of shapes the model never saw); the sense, WordNet
sense and part-of-speech probes of ``word2bert.probes`` are scored per layer. Writes the checkpoint (vocabulary
and metrics in its metadata) and its model card (``elmo.md`` next to it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from word2bert import elmo
from word2bert.data import ToyWorld, Vocab, pretraining_documents
from word2bert.device import resolve, seed_everything
from word2bert.elmo import BiLM, ElmoConfig
from word2bert.probes import english_probes, pos_probe, sense_probe
from word2bert.scripts.common import make_parser, save_card, text_source
from word2bert.training import TrainConfig


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p, groups = make_parser(__doc__, elmo.CHECKPOINT, num_tokens=300_000)
    data, model, training, out = groups.values()
    data.add_argument("--min-count", type=int, default=3, help="rarer words are <unk> for the softmax")
    data.add_argument("--vocab-size", type=int, default=10_000, help="at most this many output words")
    model.add_argument("--dim", type=int, default=128, help="token vectors and LSTM outputs")
    model.add_argument("--cell-dim", type=int, default=256, help="LSTM memory cells (projected down to --dim)")
    model.add_argument("--filters", default="1:32,2:32,3:64,4:64,5:64", help="width:count of the character CNN")
    model.add_argument("--max-characters", type=int, default=16)
    model.add_argument("--dropout", type=float, default=0.1)
    training.add_argument("--epochs", type=float, default=2.0)
    training.add_argument("--batch-size", type=int, default=64)
    training.add_argument("--lr", type=float, default=3e-3)
    training.add_argument("--warmup-steps", type=int, default=100)
    out.add_argument("--probe-seeds", default="0,1,2", help="toy worlds the probes average over ('' skips them)")
    out.add_argument("--sense-n", type=int, default=20, help="sense probe: occurrences per sense per split")
    out.add_argument("--pos-n", type=int, default=300, help="POS probe: sentences per split")
    return p.parse_args(argv)


def parse_filters(text: str) -> list[tuple[int, int]]:
    """``"1:32,2:64"`` -> ``[(1, 32), (2, 64)]``."""
    return [tuple(int(x) for x in item.split(":")) for item in text.split(",")]


def probe_scores(model: BiLM, args: argparse.Namespace) -> dict:
    seeds = [int(s) for s in args.probe_seeds.split(",") if s]
    if not seeds:
        return {}
    results = [sense_probe(model, seeds, args.sense_n, args.sense_n), pos_probe(model, seeds, args.pos_n, args.pos_n)]
    results += english_probes(model)
    return {r.name: {"mean": r.mean, "std": r.std, "seeds": len(r.scores)} for r in results}


def held_out_sentences(num_tokens: int, seed: int) -> list[list[str]]:
    """The perplexity's text: sentences written only from the toy world's held-out templates, about 5% of
    ``num_tokens`` words."""
    return [s for d in ToyWorld(seed).corpus(max(2000, num_tokens // 20), "heldout") for s in d]


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    device = resolve(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.time()
    seed_everything(args.seed)

    sentences = [
        s
        for d in pretraining_documents(args.num_tokens, args.wordnet_fraction, args.seed, args.english_fraction)
        for s in d
    ]
    held_out = held_out_sentences(args.num_tokens, args.seed)
    vocab = Vocab.build(sentences, min_count=args.min_count, max_size=args.vocab_size)
    config = ElmoConfig(
        vocab_size=len(vocab),
        max_characters=args.max_characters,
        filters=parse_filters(args.filters),
        dim=args.dim,
        cell_dim=args.cell_dim,
        dropout=args.dropout,
    )
    model = BiLM(config, vocab).to(device)
    steps_per_epoch = (len(sentences) + args.batch_size - 1) // args.batch_size
    train_config = TrainConfig(
        threads=args.threads,
        steps=max(1, round(args.epochs * steps_per_epoch)),
        lr=args.lr,
        weight_decay=0.0,
        warmup_steps=min(args.warmup_steps, steps_per_epoch),
        schedule="cosine",
    )
    initial = elmo.perplexity(model, held_out)
    history = elmo.train(model, sentences, train_config, args.batch_size, seed=args.seed, device=device)
    train_minutes = (time.time() - started) / 60
    tail = history[-max(1, len(history) // 10) :]
    metrics = {
        "device": str(device),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_words": sum(map(len, sentences)),
        "sentences": len(sentences),
        "vocab_size": len(vocab),
        "steps": train_config.steps,
        "history": history,
        "final_train_loss": sum(tail) / len(tail),
        "initial_perplexity": initial,
        "perplexity": elmo.perplexity(model, held_out),
        "train_minutes": train_minutes,
        "probes": probe_scores(model, args),
        "minutes": (time.time() - started) / 60,
    }
    # half the bytes, and the card's numbers to the digits shown
    elmo.save(model, args.out, {"metrics": {k: v for k, v in metrics.items() if k != "history"}}, torch.float16)
    metrics["checkpoint_bytes"] = Path(args.out).stat().st_size
    if not args.no_card:
        write_card(args, argv, config, train_config, metrics)
    print(json.dumps({k: metrics[k] for k in ("final_train_loss", "perplexity", "probes", "minutes")}, indent=1))
    return metrics


def write_card(
    args: argparse.Namespace, argv: list[str], config: ElmoConfig, train_config: TrainConfig, metrics: dict
) -> Path:
    """``elmo.md`` next to the checkpoint: data, configuration, the exact command, metrics."""
    ppl, first = metrics["perplexity"], metrics["initial_perplexity"]
    return save_card(
        args.out,
        name="ELMo",
        summary=(
            "Loaded by `word2bert.elmo.pretrained()`: a `BiLM` (character CNN, forward and backward 2-layer LSTM "
            "language models, shared softmax) with its word vocabulary in the checkpoint's metadata. "
            "`embed_sentence(tokens)` gives 3 layers: the token layer, LSTM 1 and LSTM 2. For teaching only."
        ),
        data=[
            (f"{metrics['train_words']:,} words in {metrics['sentences']:,} sentences from {text_source(args)}."),
            (
                f"Output vocabulary: {metrics['vocab_size']:,} words seen at least {args.min_count} times (with the "
                "special tokens); the character encoder reads UTF-8 bytes, so it needs no vocabulary."
            ),
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            (
                f"Training: `{train_config}`, batch {args.batch_size} sentences, {args.epochs} epochs; AdamW, linear "
                "warm-up then cosine decay, gradient clipping at 1.0."
            ),
            (
                f"Device `{metrics['device']}`: {metrics['train_minutes']:.1f} minutes of data and training, "
                f"{metrics['minutes']:.1f} minutes with evaluation."
            ),
        ],
        script="word2bert.scripts.train_elmo",
        argv=argv,
        metrics=[
            f"Final training loss (mean of both directions, last 10% of steps): {metrics['final_train_loss']:.3f}",
            (
                f"Perplexity on documents of held-out toy-world templates: forward {ppl['forward']:.1f}, backward "
                f"{ppl['backward']:.1f}, mean {ppl['mean']:.1f} (untrained: {first['mean']:.0f})"
            ),
        ],
        probes={
            f"Probe {name} ({p['seeds']} seed(s), per layer, held-out)": p for name, p in metrics["probes"].items()
        },
        notes=[
            (
                "Sense probes label each occurrence with the nearest sense centroid (on the toy world chance is 0.5 "
                "and a "
                "static vector such as layer 0 scores exactly 0.5); the WordNet probe is the real-English benchmark: "
                "usage examples of words with 2 or more senses, held out of the training text, half of each sense's "
                "for its centroid (chance is about 0.35). The POS probe is a "
                "linear classifier. Two runs of the committed checkpoint's command, one on a GPU and one on a CPU "
                "(`checkpoints/elmo_cpu_run.json`), differed by up to 0.08 on one layer of the toy-world sense probe, "
                "0.05 on the plain sentences, 0.01 on WordNet and POS, and 20% in perplexity: dropout draws other "
                "masks on another device, thread counts and kernels change the order of floating-point sums, and the "
                "run drifts from there. The test suite trains only a tiny configuration."
            ),
        ],
    )


if __name__ == "__main__":
    main()
