"""Train the course's small GPT on the toy world, WordNet and ordinary English: byte-level BPE vocabulary,
next-token loss, model card. The recipe and the run are ``word2bert.recipes.gpt``.

    python -m word2bert.scripts.train_gpt --threads 1 --probes    # a small GPT on the toy world (CPU, 10 min)
    python -m word2bert.scripts.train_gpt --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
        --english-fraction 0.5 --wordnet-fraction 0 --steps 4000 --warmup-steps 300
                                                                  # the committed checkpoint (CPU, about an hour)
    python -m word2bert.scripts.train_gpt --num-tokens 20000 --steps 20 --layers 1 --out /tmp/gpt.safetensors
"""

from __future__ import annotations

import json

from word2bert.recipes import options
from word2bert.recipes.gpt import GPTRecipe, train


def main(argv: list[str] | None = None) -> dict:
    return train(options.parse(GPTRecipe, argv, __doc__))[1]


if __name__ == "__main__":
    # The summary is for the command line; chapter 3's page calls main() and prints what it needs.
    metrics = main()
    print(json.dumps({k: metrics[k] for k in ("final_train_loss", "loss", "perplexity", "minutes")}))
