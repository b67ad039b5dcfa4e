"""The recipes (``word2bert.recipes``): each field is a command-line option with the field's default, the command a
recipe writes into its model card or results parses back into that recipe, ``make checkpoints`` runs the committed
checkpoints' recipes, and BERT's phases are set once for every run that uses them."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import ROOT

from word2bert.pretraining_data import MLM_PROBABILITY, NSP
from word2bert.recipes import options
from word2bert.recipes.bert import BertRecipe
from word2bert.recipes.elmo import ElmoRecipe
from word2bert.recipes.english_curve import EnglishCurveRecipe
from word2bert.recipes.gpt import GPTRecipe
from word2bert.recipes.objective_ablation import ObjectiveAblationRecipe
from word2bert.recipes.sentence_objectives import SentenceObjectivesRecipe, shorter_bert
from word2bert.recipes.word2vec import Word2VecRecipe

# A recipe of each kind with fields of every type away from their defaults: floats, None and paths, a True flag
# turned off, lists (an empty one too), a nested BERT recipe.
CHANGED = [
    BertRecipe(num_tokens=5000, wordnet_fraction=0.0, threads=2, out=Path("/tmp/a b.safetensors"), card=False),
    BertRecipe(whole_word_mask=True, lr=3e-4, metrics=Path("m.json"), device="cpu", probes=True),
    ElmoRecipe(epochs=0.5, probe_seeds=[], filters="1:8,2:8", english_fraction=0.5),
    GPTRecipe(post_ln=True, steps=20, weight_decay=0.0),
    Word2VecRecipe(num_tokens=30_000, epochs=1, card=False),
    SentenceObjectivesRecipe(bert=replace(shorter_bert(), steps=6, threads=1), seeds=[0], finetune=False),
    ObjectiveAblationRecipe(objectives=["MLM"], jobs=2, checkpoints=Path("kept")),
    EnglishCurveRecipe(points=[10], reference=Path("minilm"), no_reference=True),
]


@pytest.mark.parametrize("recipe", CHANGED, ids=lambda r: type(r).__name__)
def test_the_command_a_recipe_writes_makes_that_recipe_again(recipe):
    kind = type(recipe)
    assert options.parse(kind, []) == kind(), "no option given: the recipe's own defaults"
    argv = options.arguments(recipe)
    assert argv and options.parse(kind, argv) == recipe
    assert options.parse(kind, shlex.split(options.command("word2bert.scripts.x", recipe))[3:]) == recipe


def test_options_are_the_fields_and_flags_turn_booleans():
    parser = options.parser(BertRecipe)
    assert parser.parse_args(["--no-card", "--whole-word-mask"]).card is False
    assert "--vocab-size" in parser.format_help() and "WordPiece vocabulary size" in parser.format_help()
    nested = options.parse(SentenceObjectivesRecipe, ["--steps", "6", "--seeds", "0", "1", "--no-finetune"])
    assert nested.bert.steps == 6 and nested.bert.long_steps == 100 and nested.seeds == [0, 1] and not nested.finetune
    assert options.parse(ElmoRecipe, ["--probe-seeds"]).probe_seeds == []
    with pytest.raises(SystemExit):
        options.parse(SentenceObjectivesRecipe, ["--objectives", "MLM + NSQ"])


def test_options_write_numbers_as_one_types_them():
    assert options.arguments(ElmoRecipe(epochs=5.0, wordnet_fraction=0.0, lr=1e-3)) == [
        "--wordnet-fraction", "0", "--epochs", "5", "--lr", "0.001"
    ]  # fmt: skip


def makefile_commands(target: str) -> dict[str, list[str]]:
    """The options of each ``python -m word2bert.scripts.NAME`` that ``make TARGET`` runs."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ").replace("$(JOBS)", "2")
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M).group(1)
    return {name: shlex.split(args) for name, args in re.findall(r"word2bert\.scripts\.(\w+)(.*)", recipe)}


RECIPES = {
    "train_word2vec": Word2VecRecipe,
    "train_elmo": ElmoRecipe,
    "train_gpt": GPTRecipe,
    "pretrain_bert": BertRecipe,
}


def test_make_checkpoints_runs_the_recipes_of_the_committed_cards():
    """Each checkpoint's card says the command that made it; ``make checkpoints`` runs the same recipe (ELMo's card
    was made on a GPU: device and threads are the machine's, not the recipe's)."""
    commands = makefile_commands("checkpoints")
    assert set(commands) == set(RECIPES)
    for name, argv in commands.items():
        kind = RECIPES[name]
        card = kind().out.with_suffix(".md").read_text(encoding="utf-8")
        command = re.search(rf"python -m word2bert\.scripts\.{name} (.*)", card).group(1)
        made, run = options.parse(kind, shlex.split(command)), options.parse(kind, argv)
        assert replace(made, threads=None) == replace(run, threads=None), name


def test_make_experiments_runs_the_committed_experiments():
    commands = makefile_commands("experiments")
    so = options.parse(SentenceObjectivesRecipe, commands["sentence_objectives"])
    ablation = options.parse(ObjectiveAblationRecipe, commands["objective_ablation"])
    assert so.bert == ablation.bert == replace(shorter_bert(), threads=1), "the same pre-training: one MLM model"
    assert so.bert.phases() == [(64, 1000), (128, 100)]


def test_bert_phases_warm_up_and_mask_as_the_recipe_says():
    recipe = BertRecipe(steps=300, long_steps=40, warmup_steps=30, seed=5)
    assert recipe.phases() == [(64, 300), (128, 40)]
    first, second = (recipe.pretrain_config(i, steps, recipe.seed) for i, (_, steps) in enumerate(recipe.phases()))
    assert (first.train.warmup_steps, second.train.warmup_steps) == (30, 4), "a tenth of the last phase's steps"
    assert (first.seed, second.seed) == (5, 6) and first.mlm_probability == MLM_PROBABILITY and first.objective is NSP
    assert BertRecipe(long_steps=0).phases() == [(128, 3000)]
