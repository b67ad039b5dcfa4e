"""Our GPT against Hugging Face's GPT2LMHeadModel: training tokens/s on the same config, weights and batch,
and generation tokens/s with and without the KV cache. Run: python benchmarks/gpt_vs_hf.py"""

import torch
from machine import median_seconds  # same folder
from training_steps import gpt_pair  # same folder


def train_step_fn(model, loss_of):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(model).backward()
        opt.step()

    return step


def main(n_layer=2, n_embd=128, n_head=4, vocab=2048, batch=8, seq=64, repeats=10):
    torch.manual_seed(0)
    ours, ours_loss, hf, hf_loss, tokens, _ = gpt_pair(n_layer, n_embd, n_head, vocab, batch, seq)
    t = median_seconds(
        {
            "ours": train_step_fn(ours, ours_loss),
            "hf": train_step_fn(hf, hf_loss),
        },
        repeats,
    )
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
    prompt, new = torch.randint(0, vocab, (1, 16)), 32
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
