"""The toy world's grammar, read from ``toyworld_grammar.toml`` (data, not code): its lexicon, the part-of-speech
tags of literal words, and the templates of every kind of sentence, each template set split into ``train`` and
``heldout``. ``toyworld.ToyWorld`` fills them.

A template is a string of items separated by spaces. An item is a literal word (its tag comes from ``TAGS``), a
``{slot}`` filled from ``LEXICON`` (its tag comes from the slot), a ``word/TAG`` literal with an explicit tag, or
a polysemous word with its sense, ``mouse=animal``.
"""

from __future__ import annotations

from pathlib import Path

import tomllib

_GRAMMAR = tomllib.loads((Path(__file__).with_suffix(".toml")).read_text(encoding="utf-8"))

# slot name -> (tag, words)
LEXICON: dict[str, tuple[str, tuple[str, ...]]] = {
    slot: (entry["tag"], tuple(entry["words"].split())) for slot, entry in _GRAMMAR["lexicon"].items()
}
# Universal Dependencies tags of the literal words in templates
TAGS: dict[str, str] = {w: tag for tag, words in _GRAMMAR["tags"].items() for w in words.split()}
POS_TAGS: tuple[str, ...] = tuple(sorted(set(TAGS.values()) | {"PROPN"}))

# polysemous word -> sense -> [(cue side, template)], the cue before the word ("left") first
SENSE_TEMPLATES: dict[str, dict[str, list[tuple[str, str]]]] = {
    word: {
        sense: [(side, template) for side in ("left", "right") for template in sides.get(side, [])]
        for sense, sides in senses.items()
    }
    for word, senses in _GRAMMAR["senses"].items()
}
POLYSEMES: dict[str, tuple[str, ...]] = {w: tuple(s) for w, s in SENSE_TEMPLATES.items()}
SENSE_TOPIC: dict[str, str] = _GRAMMAR["sense_topics"]  # "word.sense" -> topic (document domain)
TOPIC_TEMPLATES: dict[str, list[str]] = _GRAMMAR["topics"]
TOPICS: tuple[str, ...] = tuple(TOPIC_TEMPLATES)

SENTIMENT_TEMPLATES: dict[str, list[str]] = _GRAMMAR["sentiment"]  # split -> templates
NLI_TEMPLATES: dict[str, dict[str, list[str]]] = _GRAMMAR["nli"]["hypotheses"]  # label -> split -> hypotheses
NLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")  # the classifier's label ids, in order
NLI_EVENTS: list[tuple[str, str, str]] = [tuple(e) for e in _GRAMMAR["nli"]["events"]]  # (past, base, objects)
# fact -> ({split: passage sentence}, {split: question}); the answer is the span filled by the {answer} slot
QA_FACTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    fact: (entry["passage"], entry["question"]) for fact, entry in _GRAMMAR["qa"].items()
}
