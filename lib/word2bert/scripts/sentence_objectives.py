"""MLM alone, MLM + NSP and MLM + SOP, compared on the same data, encoder, steps and seeds (ALBERT's Table 5). The
recipe and the runs are ``word2bert.recipes.sentence_objectives``.

    python -m word2bert.scripts.sentence_objectives --threads 1      # the committed results (CPU, ~30 min)
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.sentence_objectives import SentenceObjectivesRecipe, compare


def main(argv: list[str] | None = None) -> dict:
    return compare(options.parse(SentenceObjectivesRecipe, argv, __doc__))


if __name__ == "__main__":
    main()
