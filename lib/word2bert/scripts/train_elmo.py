"""Train the course's small ELMo on the toy world, WordNet and ordinary English: word vocabulary, biLM loss, probes,
model card. The recipe and the run are ``word2bert.recipes.elmo``.

    python -m word2bert.scripts.train_elmo --threads 1    # a small ELMo on the toy world (CPU, a few minutes)
    python -m word2bert.scripts.train_elmo --num-tokens 1000000 --english-fraction 0.5 --wordnet-fraction 0 \
        --vocab-size 12000 --epochs 5       # the committed checkpoint (4 min on a GPU, 66 on 2 CPU cores)
    python -m word2bert.scripts.train_elmo --num-tokens 5000 --epochs 1 --dim 16 --out /tmp/elmo.safetensors
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.elmo import ElmoRecipe, train


def main(argv: list[str] | None = None) -> dict:
    return train(options.parse(ElmoRecipe, argv, __doc__))[1]


if __name__ == "__main__":
    main()
