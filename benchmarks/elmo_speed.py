"""ELMo's speed on CPU: training tokens/s (forward, loss, backward, AdamW) and inference tokens/s (all three
layers), for the committed checkpoint's configuration on toy-world sentences, at 1 and 2 torch threads.
Run: python benchmarks/elmo_speed.py"""

import statistics
import time

import torch

from word2bert import elmo
from word2bert.data import ToyWorld
from word2bert.elmo import BiLM, make_batch


def median_seconds(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(batch_size: int = 64, repeats: int = 10):
    pretrained = elmo.pretrained(device="cpu")
    torch.manual_seed(0)
    model = BiLM(pretrained.config, pretrained.vocab)  # same shapes, fresh weights for training
    sentences = [list(s.tokens) for s in ToyWorld(0).sentences(batch_size)]
    batch = make_batch(sentences, model.vocab, model.config.max_characters)
    tokens = int(batch["mask"].sum())  # words plus <s> and </s>
    words = sum(map(len, sentences))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step():
        model.train()
        optimizer.zero_grad(set_to_none=True)
        model.loss(**batch).backward()
        optimizer.step()

    one_by_one = sentences[:16]
    print(f"ELMo {pretrained.config}")
    print(
        f"batch: {batch_size} toy-world sentences, {tokens} positions ({words} words + markers), "
        f"padded to {tuple(batch['chars'].shape[:2])}"
    )
    print("| threads | training tokens/s | inference tokens/s (batched) | inference words/s (embed_sentence) |")
    print("|---|---|---|---|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        train = median_seconds(train_step, repeats)
        infer = median_seconds(lambda: pretrained.embed_batch(sentences), repeats)
        single = median_seconds(lambda: [pretrained.embed_sentence(s) for s in one_by_one], max(3, repeats // 3))
        n_single = sum(map(len, one_by_one))
        print(f"| {threads} | {tokens / train:,.0f} | {tokens / infer:,.0f} | {n_single / single:,.0f} |")


if __name__ == "__main__":
    main()
