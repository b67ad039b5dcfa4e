"""Our BERT against Hugging Face's BertForPreTraining: forward+backward tokens/s on the same config, weights
and batch (MLM + NSP loss), and the achieved FLOP/s as a fraction of the machine's measured matmul peak.
Run: python benchmarks/bert_vs_hf.py"""

import time

import torch
from machine import median_seconds  # same folder
from training_steps import bert_pair  # same folder


def matmul_peak(n: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of the best of a few square float32 matmuls: the machine's practical peak."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(hidden=128, layers=2, heads=4, vocab=4096, batch=8, seq=64, repeats=10):
    torch.manual_seed(0)
    ours, ours_loss, hf, hf_loss, _, _ = bert_pair(layers, hidden, heads, vocab, batch, seq)
    t = median_seconds(
        {
            "ours": lambda: ours_loss(ours).backward(),
            "hf": lambda: hf_loss(hf).backward(),
        },
        repeats,
    )

    # Training FLOPs per token: 6 per weight of every matmul (forward 2, backward 4) plus attention's
    # Q K^T and weights @ V: 2 matmuls x 2 FLOPs x seq x hidden per layer, times 3 for the backward.
    matmul_weights = layers * (4 * hidden * hidden + 2 * hidden * 4 * hidden) + hidden * hidden * 2 + hidden * vocab
    flops = batch * seq * (6 * matmul_weights + 12 * layers * seq * hidden)
    peak = matmul_peak()
    print(f"BERT hidden={hidden} layers={layers} vocab={vocab}, batch {batch}x{seq}, {torch.get_num_threads()} threads")
    print(f"measured float32 matmul peak: {peak / 1e9:.1f} GFLOP/s")
    print("| model | fwd+bwd tokens/s | GFLOP/s | fraction of peak |")
    print("|---|---|---|---|")
    for name, s in t.items():
        print(f"| {name} | {batch * seq / s:,.0f} | {flops / s / 1e9:.1f} | {flops / s / peak:.0%} |")
    print(f"ratio ours/HF: {t['hf'] / t['ours']:.2f}x")


if __name__ == "__main__":
    torch.set_num_threads(1)  # one thread: stable numbers on a shared machine, no oversubscription
    main()
