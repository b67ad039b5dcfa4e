"""Train the course's word2vec on all of its ordinary English and keep the word vectors
(``checkpoints/word2vec-english.safetensors``). The recipe and the run are ``word2bert.recipes.word2vec``.

    python -m word2bert.scripts.train_word2vec --threads 1
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.word2vec import Word2VecRecipe, train
from word2bert.vectors import KeyedVectors


def main(argv: list[str] | None = None) -> KeyedVectors:
    return train(options.parse(Word2VecRecipe, argv, __doc__))


if __name__ == "__main__":
    main()
