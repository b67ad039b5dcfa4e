"""Pre-train the course's small BERT on the toy world, WordNet and ordinary English: WordPiece vocabulary, MLM + NSP,
model card. The recipe and the run are ``word2bert.recipes.bert``.

    python -m word2bert.scripts.pretrain_bert --threads 1 --probes       # a small BERT on the toy world (CPU, 6 min)
    python -m word2bert.scripts.pretrain_bert --threads 1 --probes --vocab-size 8000 --num-tokens 2000000 \
        --english-fraction 0.5 --wordnet-fraction 0 --steps 27000 --long-steps 2700 --eval-every 0
                                                                        # the committed checkpoint (CPU, 52 min)
    torchrun --nproc_per_node 2 -m word2bert.scripts.pretrain_bert ...   # the same, data-parallel on 2 ranks
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.bert import BertRecipe, train


def main(argv: list[str] | None = None) -> dict:
    return train(options.parse(BertRecipe, argv, __doc__))[1]


if __name__ == "__main__":
    main()
