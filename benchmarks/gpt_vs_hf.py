"""Our GPT against Hugging Face's GPT2LMHeadModel: training tokens/s on the same config, weights and batch,
and generation tokens/s with and without the KV cache. Run: python benchmarks/gpt_vs_hf.py"""

import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from word2bert.gpt import from_hf


def median_seconds(fns: dict, repeats: int, warmup: int = 2) -> dict:
    """Median seconds per call of each function; calls are interleaved so load changes hit all alike."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def train_step_fn(model, loss_of):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(model).backward()
        opt.step()

    return step


def main(n_layer=2, n_embd=128, n_head=4, vocab=2048, batch=8, seq=64, repeats=10):
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=vocab,
        n_positions=seq,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        attn_implementation="sdpa",
        bos_token_id=None,
        eos_token_id=None,
        loss_type="ForCausalLM",
    )
    hf = GPT2LMHeadModel(config)
    ours = from_hf(hf)
    ids = torch.randint(0, vocab, (batch, seq))
    t = median_seconds(
        {
            "ours": train_step_fn(ours, lambda m: m.loss(ids)),
            "hf": train_step_fn(hf, lambda m: m(ids, labels=ids).loss),
        },
        repeats,
    )
    tokens = batch * seq
    print(
        f"GPT n_layer={n_layer} n_embd={n_embd} vocab={vocab}, batch {batch}x{seq}, {torch.get_num_threads()} threads"
    )
    print("| model | training tokens/s |")
    print("|---|---|")
    for name in t:
        print(f"| {name} | {tokens / t[name]:,.0f} |")
    print(f"ratio ours/HF: {t['hf'] / t['ours']:.2f}x")

    ours.eval()
    hf.eval()
    prompt, new = ids[:1, :16], 32
    g = median_seconds(
        {
            "ours, KV cache": lambda: ours.generate(prompt, new, greedy=True),
            "ours, no cache": lambda: ours.generate(prompt, new, greedy=True, use_cache=False),
            "hf, KV cache": lambda: hf.generate(
                prompt, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0
            ),
        },
        repeats=3,
        warmup=1,
    )
    print(f"\nGeneration: 1 prompt of 16 tokens, {new} new tokens, greedy")
    print("| model | generated tokens/s |")
    print("|---|---|")
    for name in g:
        print(f"| {name} | {new / g[name]:,.0f} |")
    print(f"KV cache speed-up: {g['ours, no cache'] / g['ours, KV cache']:.2f}x")


if __name__ == "__main__":
    torch.set_num_threads(1)  # one thread: stable numbers on a shared machine, no oversubscription
    main()
