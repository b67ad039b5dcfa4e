"""How long the graded end-to-end cell of exercise 5 takes on a CPU: fine-tune the course BERT with a fresh
ClassificationHead on toy-world sentiment (the exercise's loop: AdamW, fixed seed), then score held-out templates.

Uses ``word2bert.finetune`` for the data loader and the head, as the exercise notebook does for everything around
the student's head. Prints seconds for data, training and evaluation, and the accuracy, at 1 and 2 threads.
"""

import time

import torch
import torch.nn.functional as F

from word2bert import bert, heads
from word2bert import finetune as ft


def run(threads: int, steps: int = 60, n_train: int = 320, n_test: int = 200, seed: int = 0) -> dict:
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    start = time.perf_counter()
    encoder = bert.pretrained(device="cpu").bert
    loader = ft.task_loader("sentiment", encoder.tokenizer, n_train, batch_size=16, seed=seed)
    model = ft.FineTuner(encoder, heads.ClassificationHead(encoder.config.hidden_size, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loaded = time.perf_counter()
    model.train()
    done = 0
    while done < steps:
        for batch in loader:
            logits = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
            loss = F.cross_entropy(logits, batch["labels"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            if done == steps:
                break
    trained = time.perf_counter()
    test = ft.examples("sentiment", n_test, "heldout", seed)
    predictions = ft.predict("sentiment", model, encoder.tokenizer, test, ft.FinetuneConfig())
    accuracy = ft.score("sentiment", predictions, test)["accuracy"]
    end = time.perf_counter()
    return {
        "threads": threads,
        "load_s": loaded - start,
        "train_s": trained - loaded,
        "eval_s": end - trained,
        "accuracy": accuracy,
    }


if __name__ == "__main__":
    print("| threads | load + data (s) | 60 training steps (s) | evaluation (s) | held-out accuracy |")
    print("|---|---|---|---|---|")
    for threads in (1, 2):
        r = run(threads)
        print(f"| {r['threads']} | {r['load_s']:.1f} | {r['train_s']:.1f} | {r['eval_s']:.1f} | {r['accuracy']:.3f} |")
