"""word2bert.testing's helpers for the exercises' tests: each accepts the right thing and names the wrong one."""

from __future__ import annotations

import random

import pytest
import torch

from word2bert.testing import assert_draws_from


def draws(g):
    return torch.rand(4, generator=g) if isinstance(g, torch.Generator) else [g.random() for _ in range(4)]


def global_rng(g):  # the generator's seed for the global RNG: the same draws at every call
    torch.manual_seed(g.initial_seed())
    return torch.rand(4)


def reseeds(g):  # draws from the handed generator, then reseeds it: two calls differ, the third repeats the first
    seed = g.initial_seed()
    out = torch.rand(4, generator=torch.Generator().manual_seed(seed))
    g.manual_seed(seed ^ 1)
    return out


def sets_back(rng):  # flips the handed rng between two states (its gauss_next slot, which random() never reads)
    version, internal, gauss_next = rng.getstate()
    out = random.Random(hash((version, internal, gauss_next))).random()
    rng.setstate((version, internal, 0.5 if gauss_next is None else None))
    return out


@pytest.mark.parametrize("generator", [torch.Generator().manual_seed(0), random.Random(0)], ids=["torch", "random"])
def test_assert_draws_from_accepts_an_answer_that_draws_from_its_generator(generator):
    assert_draws_from(generator, draws, "draws")


@pytest.mark.parametrize(
    "answer, generator, says",
    [
        (global_rng, torch.Generator().manual_seed(0), "gave the same result"),
        (reseeds, torch.Generator().manual_seed(0), "was reseeded"),
        (sets_back, random.Random(0), "went back to a state it had"),
    ],
)
def test_assert_draws_from_names_each_way_of_not_drawing_from_it(answer, generator, says):
    with pytest.raises(AssertionError, match=says):
        assert_draws_from(generator, answer, "the answer")
