"""GPT and BERT training steps against Hugging Face at the course checkpoints' sizes, in one interleaved run.

    python benchmarks/training_steps.py [--busy] [--repeats 10] [--profile] [--compile] [--bf16]
    TQDM_DISABLE=1 python benchmarks/training_steps.py --loops [--seconds 2]

A step is what ``training.train_step`` does: loss, backward, gradient clipping, AdamW. Ours and Hugging Face's
share the weights and the batch; calls alternate, so that a change in the machine's load hits all alike. Ours
runs with the course's optimizer (``training.make_optimizer``: the fused AdamW) and with the plain (``foreach``)
AdamW that Hugging Face's models get from ``torch.optim.AdamW`` by default; Hugging Face with both as well. The
thread counts: one; torch's default (every core, what the course's loops used before ``device.cpu_threads``); and
``device.cpu_threads()``'s choice (now the default). For GPT, also ours with its loss as it was before issue 41
(``F.cross_entropy`` of every position's logits, the last sliced off); for BERT, the course's own pre-training step
(``pretraining.PretrainingObjective``: the MLM head on the masked positions only; Hugging Face's
``BertForPreTraining`` and our ``BertForPreTraining.forward`` run it on every position). ``--busy`` adds a
competing process that keeps one core busy on the same cores. ``--profile`` prints where ours spends a step's
time, by operator. ``--bf16`` adds ours and Hugging Face's under CPU bf16 autocast, reported in rows of their own
(it says whether the CPU computes in bf16 natively).

``--loops`` runs a few seconds of each of the course's training loops (word2vec, GloVe, ELMo, GPT, BERT
pre-training, fine-tuning) alone and then beside the busy neighbour, on the library's default threads
(``device.cpu_threads()``) and on torch's default (every core, what the loops used before), and prints each
one's words, tokens or steps per second and the slowdown busy / alone.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from machine import busy_neighbour, load, median_seconds  # same folder
from transformers import BertConfig, BertForPreTraining, GPT2Config, GPT2LMHeadModel

from word2bert import bert, device, elmo, gpt
from word2bert import finetune as ft
from word2bert.data.toyworld import ToyWorld
from word2bert.device import cpu_threads
from word2bert.glove import GloVe
from word2bert.pretraining import PretrainConfig, PretrainingObjective, pretrain
from word2bert.pretraining_data import create_pretraining_instances, tokenize_documents
from word2bert.training import TrainConfig, train
from word2bert.word2vec import Word2Vec


def step_fn(model, loss_of, fused: bool):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else True)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_of(model).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def bf16(loss_of):
    """The loss under CPU bf16 autocast: matrix products in bfloat16, the weights and the optimizer in float32."""

    def loss(model):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return loss_of(model)

    return loss


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 itself (AVX-512 BF16 or AMX on x86, BF16 on Arm); without, oneDNN
    converts to float32 and back around every product."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = {w for line in f if line.startswith(("flags", "Features")) for w in line.split()}
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


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

    def plain(m):  # GPT.loss before issue 41: F.cross_entropy of the [B, T, V] logits, the last position sliced off
        return F.cross_entropy(m(ids)[:, :-1].flatten(0, 1), ids[:, 1:].flatten())

    extra = {"ours, F.cross_entropy of every logit (the loss before), fused AdamW": (ours, plain)}
    return ours, lambda m: m.loss(ids), hf, lambda m: m(ids, labels=ids).loss, batch * seq, extra


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
    course = PretrainingObjective(ours), lambda m: m(ids, **kw)

    def plain(m):  # BertForPreTraining's loss before issue 41: F.cross_entropy of every position's logits
        out = m(ids, **kw)
        mlm = F.cross_entropy(out.prediction_logits.flatten(0, 1), kw["labels"].flatten())
        return mlm + F.cross_entropy(out.seq_relationship_logits, kw["next_sentence_label"])

    extra = {
        "ours, course's objective (MLM head on masked positions), fused AdamW": course,
        "ours, F.cross_entropy of every logit (the loss before), fused AdamW": (ours, plain),
    }
    return ours, lambda m: m(ids, **kw).loss, hf, lambda m: m(ids, **kw).loss, batch * seq, extra


def profile(name: str, model, loss_of) -> None:
    step = step_fn(model, loss_of, fused=True)
    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            step()
    print(f"\n{name}, ours, 3 steps, fused AdamW: operators by own CPU time\n")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


def training_loops(seconds: float) -> dict[str, tuple[str, Callable[[int | None], tuple[float, float]]]]:
    """Each of the course's training loops, sized to take about ``seconds`` alone on one thread of the 2-core VM:
    name -> (unit, run), where ``run(threads)`` trains once with ``threads`` (None: the library's default) and
    returns (units processed, seconds). Vocabulary and co-occurrence counting are part of word2vec's and GloVe's
    time; fine-tuning's time includes its set-up and scoring 16 test examples."""
    documents = ToyWorld(0).corpus(100_000)
    sentences = [s for d in documents for s in d]
    words = sum(map(len, sentences))

    def timed(units: float, fn: Callable[[], object]) -> tuple[float, float]:
        start = time.perf_counter()
        fn()
        return units, time.perf_counter() - start

    def word2vec(threads):
        epochs = max(1, round(seconds * 200_000 / words))  # about 200k words/s on one thread
        return timed(words * epochs, lambda: Word2Vec(sentences, epochs=epochs, progress=False, threads=threads))

    def glove(threads):
        epochs = max(1, round(seconds))  # about 1 s an epoch
        return timed(words * epochs, lambda: GloVe(sentences, epochs=epochs, progress=False, threads=threads))

    bilm = elmo.pretrained("cpu")
    elmo_sentences = sentences[:2000]
    per_sentence = sum(map(len, elmo_sentences)) / len(elmo_sentences)

    def elmo_loop(threads):
        steps = max(2, round(seconds * 1.5))
        config = TrainConfig(steps=steps, warmup_steps=1, threads=threads)
        model = copy.deepcopy(bilm)
        return timed(steps * 32 * per_sentence, lambda: elmo.train(model, elmo_sentences, config, batch_size=32))

    causal = gpt.pretrained("cpu")
    ids = torch.randint(0, causal.config.vocab_size, (16, 64))

    def gpt_loop(threads):
        steps = max(2, round(seconds * 2))
        config = TrainConfig(steps=steps, warmup_steps=1, threads=threads)
        model = copy.deepcopy(causal)
        return timed(steps * ids.numel(), lambda: train(model, [ids], lambda m, b: m.loss(b), config, "cpu"))

    masked = bert.pretrained("cpu")
    instances = create_pretraining_instances(tokenize_documents(masked.tokenizer, documents[:300]), 64, seed=0)

    def bert_loop(threads):
        steps = max(2, round(seconds * 5))
        train_config = TrainConfig(steps=steps, warmup_steps=1, threads=threads)
        config = PretrainConfig(train=train_config, batch_size=16, eval_every=0)
        model = copy.deepcopy(masked)
        return timed(steps * 16 * 64, lambda: pretrain(model, instances, masked.tokenizer, config, device="cpu"))

    def finetune_loop(threads):
        steps = max(2, round(seconds * 6))
        config = ft.FinetuneConfig(n_train=160, n_test=16, steps=steps, threads=threads)
        return timed(steps, lambda: ft.finetune("sentiment", masked.bert, config, device="cpu"))

    return {
        "word2vec (skip-gram)": ("words/s", word2vec),
        "GloVe": ("words/s", glove),
        "ELMo biLM": ("words/s", elmo_loop),
        "GPT": ("tokens/s", gpt_loop),
        "BERT pre-training": ("tokens/s", bert_loop),
        "fine-tuning (sentiment)": ("steps/s", finetune_loop),
    }


def rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def loops_under_load(seconds: float, names: list[str] | None) -> None:
    """Each loop alone, then at once beside a busy neighbour, with the library's threads and with torch's."""
    every_core = torch.get_num_threads()
    print(f"torch {torch.__version__}, {len(os.sched_getaffinity(0))} cores, torch default {every_core} threads")
    print(f"start: {load()}", flush=True)
    chosen = []  # the thread counts the loops ran on: device.cpu_threads' answers, recorded
    choose = device.cpu_threads
    device.cpu_threads = lambda threads=None: chosen.append(choose(threads)) or chosen[-1]
    rows = []
    for name, (unit, run) in training_loops(seconds).items():
        if names and name not in names:
            continue
        run(1)  # warm-up: first calls, lazy initialisation, the word2vec kernel's loading
        for label, threads in [("library default", None), (f"torch default ({every_core})", every_core)]:
            speed = {}
            for busy in (False, True):
                chosen.clear()
                with busy_neighbour(busy):
                    units, took = run(threads)
                speed[busy] = units / took
                where = "busy" if busy else "alone"
                print(f"{name}, {label}, {where}: {chosen} threads, {rate(speed[busy])} {unit}, {took:.1f} s; {load()}")
            rows.append((name, label, unit, speed[False], speed[True]))
    device.cpu_threads = choose
    print(f"end: {load()}\n")
    print("| loop | threads | alone | busy neighbour | busy / alone |")
    print("|---|---|---|---|---|")
    for name, label, unit, alone, busy in rows:
        print(f"| {name} | {label} | {rate(alone)} {unit} | {rate(busy)} {unit} | {busy / alone:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--threads", type=int, nargs="+", help="thread counts (default: 1, torch's, cpu_threads())")
    parser.add_argument("--models", nargs="+", choices=["GPT", "BERT"], default=["GPT", "BERT"])
    parser.add_argument("--compile", action="store_true", help="also ours with torch.compile'd loss (minutes)")
    parser.add_argument("--bf16", action="store_true", help="also ours and HF under CPU bf16 autocast")
    parser.add_argument("--loops", action="store_true", help="each training loop alone and beside a busy process")
    parser.add_argument("--seconds", type=float, default=2.0, help="--loops: about how long a run takes alone")
    parser.add_argument("--only", nargs="+", help="--loops: these loops only (names as printed)")
    args = parser.parse_args(argv)
    if args.loops:
        return loops_under_load(args.seconds, args.only)
    default_threads = torch.get_num_threads()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {len(os.sched_getaffinity(0))} cores, torch default {default_threads} threads")
    if args.bf16:
        print(f"native bf16 on this CPU: {'yes' if native_bf16() else 'no (emulated: expect it slower)'}")
    for name, pair in [("GPT", gpt_pair), ("BERT", bert_pair)]:
        if name not in args.models:
            continue
        ours, ours_loss, hf, hf_loss, tokens, extra = pair()
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
                if args.bf16:
                    steps["ours, bf16 autocast, fused AdamW"] = step_fn(ours, bf16(ours_loss), fused=True)
                    steps["HF, bf16 autocast, foreach AdamW"] = step_fn(hf, bf16(hf_loss), fused=False)
                for who, (model, loss_of) in extra.items():
                    steps[who] = step_fn(model, loss_of, fused=True)
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
