"""Train the course's small GPT on the toy world, WordNet and ordinary English: byte-level BPE vocabulary,
next-token loss, model card.

    python -m word2bert.scripts.train_gpt --threads 1 --probes    # a small GPT on the toy world (CPU, 10 min)
    python -m word2bert.scripts.train_gpt --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
        --english-fraction 0.5 --wordnet-fraction 0 --steps 4000 --warmup-steps 300
                                                                  # the committed checkpoint (CPU, about an hour)
    python -m word2bert.scripts.train_gpt --num-tokens 20000 --steps 20 --layers 1 --out /tmp/gpt.safetensors

The defaults are the course's first recipe (2,048 tokens, a million words, a quarter of them WordNet's, 600 steps);
the committed checkpoint's command is the second line: the vocabulary and data of the committed BERT, read for
enough steps that the English half moves its sense probes (as ``word2bert.scripts.english_curve`` measured for BERT).

The documents are joined into one stream of BPE tokens, separated by ``<|endoftext|>`` (as GPT-2's WebText), and
cut into windows of ``--block-size`` tokens. Two held-out sets are scored: documents of the same mixture the
model never saw, and documents written from the toy world's held-out templates (sentences of new shapes).
Writes the checkpoint (tokenizer in its metadata) and its model card (``gpt.md`` next to it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

from word2bert import gpt
from word2bert.bpe import ENDOFTEXT, BPETokenizer
from word2bert.data import ToyWorld, pretraining_documents
from word2bert.device import resolve, seed_everything
from word2bert.gpt import GPT, GPTConfig, document_text, next_token_loss, token_stream, windows
from word2bert.scripts.common import make_parser, save_card, text_source
from word2bert.training import TrainConfig, train


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p, groups = make_parser(__doc__, gpt.CHECKPOINT, num_tokens=1_000_000)
    data, model, training, out = groups.values()
    data.add_argument("--eval-fraction", type=float, default=0.02, help="documents held out for the loss")
    data.add_argument("--vocab-size", type=int, default=2048, help="BPE vocabulary size (with 256 bytes)")
    model.add_argument("--layers", type=int, default=4)
    model.add_argument("--hidden", type=int, default=128)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--block-size", type=int, default=64)
    model.add_argument("--post-ln", action="store_true", help="GPT-1's post-LN block instead of GPT-2's pre-LN")
    training.add_argument("--steps", type=int, default=600)
    training.add_argument("--batch-size", type=int, default=32)
    training.add_argument("--lr", type=float, default=2e-3)
    training.add_argument("--warmup-steps", type=int, default=60)
    training.add_argument("--weight-decay", type=float, default=0.1)
    # The text is read about once, so there is little to over-fit: no dropout.
    training.add_argument("--dropout", type=float, default=0.0)
    out.add_argument("--probes", action="store_true", help="score the sense probe (left and right cues) for the card")
    return p.parse_args(argv)


def held_out_templates(num_tokens: int, seed: int) -> list[list[list[str]]]:
    """Toy-world documents written only from held-out templates: about 1% of ``num_tokens`` words."""
    return ToyWorld(seed).corpus(max(2000, num_tokens // 100), "heldout")


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    device = resolve(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.time()
    generator = seed_everything(args.seed)

    docs = pretraining_documents(args.num_tokens, args.wordnet_fraction, args.seed, args.english_fraction)
    n_eval = max(1, int(len(docs) * args.eval_fraction))
    train_docs, eval_docs = docs[n_eval:], docs[:n_eval]
    tokenizer = BPETokenizer.train(map(document_text, train_docs), args.vocab_size)
    train_windows = windows(token_stream(tokenizer, train_docs), args.block_size)
    held_out = {
        "held-out documents": windows(token_stream(tokenizer, eval_docs), args.block_size),
        "held-out templates": windows(
            token_stream(tokenizer, held_out_templates(args.num_tokens, args.seed)), args.block_size
        ),
    }
    order = torch.randperm(len(train_windows), generator=generator)
    batches = [train_windows[order[i : i + args.batch_size]] for i in range(0, len(order), args.batch_size)]

    config = GPTConfig(
        vocab_size=tokenizer.vocab_size,
        block_size=args.block_size,
        n_layer=args.layers,
        n_head=args.heads,
        n_embd=args.hidden,
        dropout=args.dropout,
        post_ln=args.post_ln,
    )
    model = GPT(config, tokenizer)
    train_config = TrainConfig(
        threads=args.threads,
        steps=args.steps,
        lr=args.lr,
        weight_decay=args.weight_decay,
        betas=(0.9, 0.95),
        warmup_steps=args.warmup_steps,
        schedule="cosine",
    )
    model.to(device)
    initial = {name: next_token_loss(model, data, args.batch_size, device) for name, data in held_out.items()}
    history = train(model, batches, lambda m, b: m.loss(b), train_config, device, desc="GPT")
    final = {name: next_token_loss(model, data, args.batch_size, device) for name, data in held_out.items()}
    gpt.save(model, args.out, torch.float16)  # half the bytes, and the card's numbers to the digits shown

    tail = history[-max(1, len(history) // 10) :]
    metrics = {
        "device": str(device),
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_words": sum(len(s) for d in train_docs for s in d),
        "train_tokens": train_windows.numel(),
        "epochs": args.steps * args.batch_size / len(train_windows),
        "vocab_size": tokenizer.vocab_size,
        "history": history,
        "final_train_loss": sum(tail) / len(tail),
        "initial_loss": initial,
        "loss": final,
        "perplexity": {name: math.exp(loss) for name, loss in final.items()},
        "minutes": (time.time() - started) / 60,
        "checkpoint_bytes": Path(args.out).stat().st_size,
    }
    if args.probes:
        from word2bert.probes import english_probes, sense_probe

        metrics["probes"] = {
            f"Sense probe, {cue} cues (held-out templates, seeds 0-2, per layer)": {"mean": r.mean, "std": r.std}
            for cue in ("left", "right")
            for r in [sense_probe(model, cue=cue)]
        } | {
            f"Probe, {r.name} ({len(r.scores)} halvings, per layer)": {"mean": r.mean, "std": r.std}
            for r in english_probes(model)
        }
    if not args.no_card:
        write_card(args, argv, config, train_config, metrics, model)
    return metrics


def write_card(
    args: argparse.Namespace,
    argv: list[str] | None,
    config: GPTConfig,
    train_config: TrainConfig,
    metrics: dict,
    model: GPT,
) -> Path:
    """``gpt.md`` next to the checkpoint: data, configuration, the exact command, metrics, a sample."""
    prompt = "the bank"
    ids = torch.tensor([model.tokenizer.encode(prompt)], device=model.wte.weight.device)
    sample = model.generate(ids, 24, temperature=0.8, generator=torch.Generator().manual_seed(0))
    text = model.tokenizer.decode(sample[0].tolist()).split(ENDOFTEXT)[0]
    return save_card(
        args.out,
        name="GPT",
        summary=(
            "Loaded by `word2bert.gpt.pretrained()`: a decoder-only `GPT` (pre-LN, GPT-2's block) with its byte-level "
            "BPE tokenizer in the checkpoint's metadata. For teaching only."
        ),
        data=[
            f"{metrics['train_words']:,} words of training documents from {text_source(args)}; "
            f"{args.eval_fraction:.0%} of the documents held out.",
            f"Byte-level BPE vocabulary of {metrics['vocab_size']} tokens (256 bytes, `{ENDOFTEXT}`, merges) trained "
            f"on the training documents; {metrics['train_tokens']:,} training tokens in windows of {args.block_size}, "
            f"read {metrics['epochs']:.2f} times.",
        ],
        config=config,
        parameters=metrics["parameters"],
        configuration=[
            f"Training: `{train_config}`, batch {args.batch_size}; AdamW with weight-decay groups, linear warm-up then "
            "cosine decay, gradient clipping at 1.0.",
            f"Device `{metrics['device']}`, {metrics['minutes']:.1f} minutes in all (data, tokenizer, training, "
            "evaluation).",
        ],
        script="word2bert.scripts.train_gpt",
        argv=sys.argv[1:] if argv is None else argv,
        metrics_title="Metrics (next-token cross-entropy in nats per BPE token)",
        metrics=[
            f"Final training loss (mean of the last 10% of steps): {metrics['final_train_loss']:.3f}",
            *(
                f"{name.capitalize()}: loss {loss:.3f}, perplexity {metrics['perplexity'][name]:.1f} "
                f"(untrained: {metrics['initial_loss'][name]:.3f})"
                for name, loss in metrics["loss"].items()
            ),
        ],
        probes=metrics.get("probes", {}),
        notes=[
            f'Sample (prompt "{prompt}", temperature 0.8, seed 0): {text!r}',
            "Re-running the command on a CPU gives these numbers up to small floating-point differences (thread counts "
            "change the order of sums).",
        ],
    )


if __name__ == "__main__":
    # The summary is for the command line; chapter 3's page calls main() and prints what it needs.
    metrics = main()
    print(json.dumps({k: metrics[k] for k in ("final_train_loss", "loss", "perplexity", "minutes")}))
