"""The controlled objective ablation: one encoder trained three ways, all else the same. The recipe and the runs are
``word2bert.recipes.objective_ablation``.

    python -m word2bert.scripts.objective_ablation --threads 1 --jobs 2   # the committed results (CPU, ~30 min)
"""

from __future__ import annotations

from word2bert.recipes import options
from word2bert.recipes.objective_ablation import ObjectiveAblationRecipe, ablate


def main(argv: list[str] | None = None) -> dict:
    return ablate(options.parse(ObjectiveAblationRecipe, argv, __doc__))


if __name__ == "__main__":
    main()
