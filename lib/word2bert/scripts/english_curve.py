"""How much data, width and training the course BERT needs to tell senses apart in ordinary English. The grid, the
runs and their scores are ``word2bert.recipes.english_curve``.

    python -m word2bert.scripts.english_curve --threads 1              # the committed curve's CPU runs (points 0-4)
    python -m word2bert.scripts.english_curve --device cuda --points 5 6 7 8 9 10 11  # its GPU runs (H200)
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.english_curve import EnglishCurveRecipe, curve


def main(argv: list[str] | None = None) -> dict:
    return curve(options.parse(EnglishCurveRecipe, argv, __doc__))


if __name__ == "__main__":
    main()
