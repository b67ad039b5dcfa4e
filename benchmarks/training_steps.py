"""GPT and BERT training steps against Hugging Face at the course checkpoints' sizes, in one interleaved run.

    python benchmarks/training_steps.py [--busy] [--repeats 10] [--profile]

A step is what ``training.train_step`` does: loss, backward, gradient clipping, AdamW. Ours and Hugging Face's
share the weights and the batch; calls alternate, so that a change in the machine's load hits all alike. Ours
runs with the course's optimizer (``training.make_optimizer``: the fused AdamW) and with the plain (``foreach``)
AdamW that Hugging Face's models get from ``torch.optim.AdamW`` by default; Hugging Face with both as well. The
thread counts: one; torch's default (every core, what the course's loops used before ``device.cpu_threads``); and
``device.cpu_threads()``'s choice (now the default). For BERT, also the course's own pre-training step
(``pretraining.PretrainingObjective``: the MLM head on the masked positions only; Hugging Face's
``BertForPreTraining`` and our ``BertForPreTraining.forward`` run it on every position). ``--busy`` adds a
competing process that keeps one core busy on the same cores. ``--profile`` prints where ours spends a step's
time, by operator.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from machine import busy_neighbour, load, median_seconds  # same folder
from transformers import BertConfig, BertForPreTraining, GPT2Config, GPT2LMHeadModel

from word2bert import bert, gpt
from word2bert.device import cpu_threads
from word2bert.pretraining import PretrainingObjective


def step_fn(model, loss_of, fused: bool):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else True)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_of(model).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def gpt_pair(layers=4, hidden=128, heads=4, vocab=8000, batch=32, seq=64):
    """The GPT checkpoint's recipe (make checkpoints): 4 layers of 128, 8,000 BPE tokens, 32 windows of 64."""
    config = GPT2Config(
        vocab_size=vocab,
        n_positions=seq,
        n_embd=hidden,
        n_layer=layers,
        n_head=heads,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        attn_implementation="sdpa",
        bos_token_id=None,
        eos_token_id=None,
        loss_type="ForCausalLM",
    )
    hf = GPT2LMHeadModel(config)
    ours = gpt.from_hf(hf)
    ids = torch.randint(0, vocab, (batch, seq))
    return ours, lambda m: m.loss(ids), hf, lambda m: m(ids, labels=ids).loss, batch * seq, None


def bert_pair(layers=4, hidden=128, heads=4, vocab=8000, batch=16, seq=128):
    """The BERT checkpoint's recipe: 4 layers of 128, 8,000 WordPiece tokens, 16 pairs of 128 (MLM + NSP)."""
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=seq,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attn_implementation="sdpa",
    )
    hf = BertForPreTraining(config)
    ours = bert.from_hf(hf)
    ids = torch.randint(0, vocab, (batch, seq))
    kw = {
        "token_type_ids": (torch.arange(seq) >= seq // 2).long().expand(batch, seq),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
        "labels": ids.masked_fill(torch.rand(batch, seq) > 0.15, -100),
        "next_sentence_label": torch.randint(0, 2, (batch,)),
    }
    kw["attention_mask"][: batch // 2, -seq // 4 :] = 0
    # the course's pre-training step: PretrainingObjective runs the MLM head on the masked positions only
    course = PretrainingObjective(ours), lambda m: m(ids, **kw)[0]
    return ours, lambda m: m(ids, **kw).loss, hf, lambda m: m(ids, **kw).loss, batch * seq, course


def profile(name: str, model, loss_of) -> None:
    step = step_fn(model, loss_of, fused=True)
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
    print(f"\n{name}, ours, 3 steps, fused AdamW: operators by own CPU time\n")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", type=int, nargs="+", help="thread counts (default: 1, torch's, cpu_threads())")
    parser.add_argument("--models", nargs="+", choices=["GPT", "BERT"], default=["GPT", "BERT"])
    parser.add_argument("--compile", action="store_true", help="also ours with torch.compile'd loss (minutes)")
    args = parser.parse_args(argv)
    default_threads = torch.get_num_threads()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {len(os.sched_getaffinity(0))} cores, torch default {default_threads} threads")
    for name, pair in [("GPT", gpt_pair), ("BERT", bert_pair)]:
        if name not in args.models:
            continue
        ours, ours_loss, hf, hf_loss, tokens, course = pair()
        if args.profile:
            torch.set_num_threads(1)
            profile(name, ours, ours_loss)
        compiled = None
        if args.compile:  # inductor's CPU code fuses the elementwise work (layer norm, GELU, softmax) around matmuls
            compiled = step_fn(ours, torch.compile(ours_loss), fused=True)
            start = time.perf_counter()
            compiled()
            print(f"{name}: torch.compile took {time.perf_counter() - start:.0f} s (the first step)")
        with busy_neighbour(args.busy):
            chosen = cpu_threads()
            rows = []
            for threads in dict.fromkeys(args.threads or [1, default_threads, chosen]):
                torch.set_num_threads(threads)
                print(f"\n{name}, {threads} threads{', busy neighbour' if args.busy else ''}; before: {load()}")
                steps = {
                    "ours, fused AdamW": step_fn(ours, ours_loss, fused=True),
                    "ours, foreach AdamW": step_fn(ours, ours_loss, fused=False),
                    "HF, foreach AdamW": step_fn(hf, hf_loss, fused=False),
                    "HF, fused AdamW": step_fn(hf, hf_loss, fused=True),
                }
                if compiled:
                    steps["ours, torch.compile'd loss, fused AdamW"] = compiled
                if course:
                    steps["ours, course's objective (MLM head on masked positions), fused AdamW"] = step_fn(
                        *course, fused=True
                    )
                t = median_seconds(steps, args.repeats)
                print(f"after: {load()}")
                for who, seconds in t.items():
                    rows.append((threads, who, tokens / seconds, t["HF, foreach AdamW"] / seconds))
                    print(f"  {who}: {tokens / seconds:,.0f} tokens/s, {rows[-1][-1]:.2f}x HF (foreach)", flush=True)
        torch.set_num_threads(default_threads)
        print(f"\n{name}: cpu_threads() chose {chosen}\n")
        print("| threads | model | training tokens/s | speed / HF (foreach AdamW) |")
        print("|---|---|---|---|")
        for threads, who, speed, ratio in rows:
            print(f"| {threads} | {who} | {speed:,.0f} | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
