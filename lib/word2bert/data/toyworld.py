"""The toy world: a seeded probabilistic grammar that writes the course's corpus and its gold annotations.

Every chapter trains and measures on this text. It is small enough for few-MB checkpoints and rich enough to
show what each model can and cannot do:

* polysemous words (mouse, bank, bright, apple, bat, bass, crane, spring, star, plant, bark, match) appear in
  two senses each, and the word that decides the sense (the *cue*) stands sometimes before the word and
  sometimes after it, so a left-to-right model (chapter 3) misses half of the cues;
* every token carries a part-of-speech tag (Universal Dependencies tags);
* sentences group into short documents about one topic, for next-sentence prediction;
* labelled tasks for fine-tuning: sentiment (with negation and "but"), sentence pairs for entailment, and
  questions whose answers are spans of a passage.

Templates are split into ``train`` and ``heldout`` sets: probes and fine-tuned models are scored on sentences
whose templates the models never saw. Same seed, same corpus.

The word lists and templates are in ``toyworld_grammar``; this module fills them.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from .toyworld_grammar import (
    LEXICON,
    NLI_EVENTS,
    NLI_LABELS,
    NLI_TEMPLATES,
    QA_FACTS,
    SENSE_TEMPLATES,
    SENSE_TOPIC,
    SENTIMENT_TEMPLATES,
    TAGS,
    TOPIC_TEMPLATES,
    TOPICS,
)

# --- generated examples ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    """A generated sentence with gold part-of-speech tags and the sense of every polysemous occurrence."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    senses: tuple[str | None, ...]  # "mouse.animal" at polysemous positions, None elsewhere
    template: str

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


@dataclass(frozen=True)
class SenseOccurrence:
    """One occurrence of a polysemous word: the sentence, where the word is, and its gold sense."""

    tokens: tuple[str, ...]
    index: int
    word: str
    sense: str  # "mouse.animal"
    cue: str  # "left" or "right": where the word that decides the sense stands
    template: str


@dataclass(frozen=True)
class Labeled:
    tokens: tuple[str, ...]
    label: int  # sentiment: 0 negative, 1 positive


@dataclass(frozen=True)
class NLIPair:
    premise: tuple[str, ...]
    hypothesis: tuple[str, ...]
    label: int  # index into NLI_LABELS


@dataclass(frozen=True)
class QAExample:
    passage: tuple[str, ...]
    question: tuple[str, ...]
    start: int  # answer span in passage tokens, inclusive at both ends
    end: int

    @property
    def answer(self) -> tuple[str, ...]:
        return self.passage[self.start : self.end + 1]


SPLITS = ("train", "heldout")


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def _sense_templates(split: str) -> list[tuple[str, str, str, str]]:
    """(word, sense, cue, template) for the templates of one split: the last of each cue side is held out."""
    out = []
    for word, senses in SENSE_TEMPLATES.items():
        for sense, templates in senses.items():
            for cue in ("left", "right"):
                side = [t for c, t in templates if c == cue]
                chosen = side[-1:] if split == "heldout" else side[:-1]
                out += [(word, sense, cue, t) for t in chosen]
    return out


def _tag_of(word: str, template: str) -> str:
    try:
        return TAGS[word]
    except KeyError:
        raise KeyError(
            f"no part-of-speech tag for {word!r} in template {template!r}: add it to TAGS or write it as word/TAG"
        ) from None


def _a_an(tokens: list[str]) -> None:
    """English article agreement after slots are filled: 'a apple' -> 'an apple'."""
    for i in range(len(tokens) - 1):
        if tokens[i] in ("a", "an"):
            tokens[i] = "an" if tokens[i + 1][0] in "aeiou" else "a"


class ToyWorld:
    """The course's generated world. Every method is deterministic given ``seed``, and asking for fewer
    examples gives a prefix of asking for more."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def _rng(self, kind: str, split: str) -> random.Random:
        _check_split(split)
        return random.Random(f"toyworld/{self.seed}/{kind}/{split}")

    # filling templates -------------------------------------------------------------------------------------
    def fill(self, template: str, rng: random.Random, fixed: dict[str, str] | None = None) -> Sentence:
        """Fill ``template``'s slots; ``fixed`` pins slot values (e.g. the same {name} through a document)."""
        fixed = fixed or {}
        tokens: list[str] = []
        tags: list[str] = []
        senses: list[str | None] = []
        for item in template.split():
            if item.startswith("{"):
                slot = item[1:-1]
                tag, words = LEXICON[slot]
                tokens.append(fixed.get(slot) or rng.choice(words))
                tags.append(tag)
                senses.append(None)
                continue
            word, _, tag = item.partition("/")
            word, _, sense = word.partition("=")
            tokens.append(word)
            tags.append(tag or _tag_of(word, template))
            senses.append(f"{word}.{sense}" if sense else None)
        _a_an(tokens)
        return Sentence(tuple(tokens), tuple(tags), tuple(senses), template)

    # corpora ---------------------------------------------------------------------------------------------
    def sentences(self, n: int, split: str = "train") -> list[Sentence]:
        """Sentences of the world: sense templates of ``split`` and (for train) the topics' plain sentences."""
        rng = self._rng("sentences", split)
        pool = [t for *_, t in _sense_templates(split)]
        if split == "train":
            pool += [t for ts in TOPIC_TEMPLATES.values() for t in ts]
        return [self.fill(rng.choice(pool), rng) for _ in range(n)]

    def sense_occurrences(self, n_per_sense: int, split: str = "heldout") -> list[SenseOccurrence]:
        """``n_per_sense`` occurrences of every sense of every polysemous word, half of them per cue side."""
        rng = self._rng("senses", split)
        by_sense: dict[tuple[str, str, str], list[str]] = {}
        for word, sense, cue, t in _sense_templates(split):
            by_sense.setdefault((word, sense, cue), []).append(t)
        out = []
        for (word, sense, cue), templates in by_sense.items():
            for _ in range((n_per_sense + (cue == "left")) // 2):
                t = rng.choice(templates)
                s = self.fill(t, rng)
                i = s.senses.index(f"{word}.{sense}")
                out.append(SenseOccurrence(s.tokens, i, word, f"{word}.{sense}", cue, t))
        return out

    def iter_documents(
        self, split: str = "train", min_sentences: int = 3, max_sentences: int = 8
    ) -> Iterator[list[Sentence]]:
        """Endless short documents, each about one topic and one person; a polysemous word is drawn in the
        sense that fits the topic. Reviews and people's profiles make documents too."""
        return (document for _, document in self.iter_topic_documents(split, min_sentences, max_sentences))

    def iter_topic_documents(
        self, split: str = "train", min_sentences: int = 3, max_sentences: int = 8
    ) -> Iterator[tuple[str, list[Sentence]]]:
        """``iter_documents`` with each document's topic: one of ``TOPICS``, "reviews" or "people"."""
        rng = self._rng("documents", split)
        by_topic = {t: list(ts) if split == "train" else [] for t, ts in TOPIC_TEMPLATES.items()}
        for word, sense, _, t in _sense_templates(split):
            by_topic[SENSE_TOPIC[f"{word}.{sense}"]] += [t, t]  # sense sentences twice as likely as plain ones
        kinds = list(TOPICS) + ["reviews", "people"]
        while True:
            kind = rng.choice(kinds)
            k = rng.randint(min_sentences, max_sentences)
            if kind == "reviews":
                yield kind, [self._sentiment_one(rng, split, rng.randint(0, 1)) for _ in range(k)]
            elif kind == "people":
                yield kind, self._profile(rng, rng.choice(LEXICON["name"][1]), split)[0][:k]
            else:
                fixed = {"name": rng.choice(LEXICON["name"][1])}
                yield kind, [self.fill(rng.choice(by_topic[kind]), rng, fixed) for _ in range(k)]

    def documents(self, n: int, split: str = "train") -> list[list[Sentence]]:
        """The first ``n`` documents of ``iter_documents``."""
        return list(itertools.islice(self.iter_documents(split), n))

    def corpus(self, num_tokens: int, split: str = "train") -> list[list[list[str]]]:
        """Documents (lists of token lists) until about ``num_tokens`` tokens: the text the models learn from."""
        out, total = [], 0
        for doc in self.iter_documents(split):
            if total >= num_tokens:
                break
            out.append([list(s.tokens) for s in doc])
            total += sum(len(s.tokens) for s in doc)
        return out

    # labelled tasks --------------------------------------------------------------------------------------
    def _sentiment_one(self, rng: random.Random, split: str, label: int) -> Sentence:
        good, bad = LEXICON["pos_adj"][1], LEXICON["neg_adj"][1]
        same, other = (good, bad) if label == 1 else (bad, good)
        things = LEXICON["review_thing"][1]
        fixed = {
            "adj": rng.choice(same),
            "nadj": rng.choice(other),
            "nadj2": rng.choice(other),
            "review_thing2": rng.choice(things),
        }
        template = rng.choice(SENTIMENT_TEMPLATES[split])
        for slot, value in fixed.items():
            template = template.replace("{" + slot + "}", value + "/ADJ" if "adj" in slot else value + "/NOUN")
        return self.fill(template, rng)

    def sentiment(self, n: int, split: str = "train") -> list[Labeled]:
        """Balanced positive (1) / negative (0) sentences; negation and 'but' make word counts misleading."""
        rng = self._rng("sentiment", split)
        out = []
        for i in range(n):
            out.append(Labeled(self._sentiment_one(rng, split, i % 2).tokens, i % 2))
        rng.shuffle(out)
        return out

    def nli(self, n: int, split: str = "train") -> list[NLIPair]:
        """Premise/hypothesis pairs, balanced over entailment, neutral and contradiction."""
        rng = self._rng("nli", split)
        names, places = LEXICON["name"][1], LEXICON["room"][1]
        out = []
        for i in range(n):
            label = NLI_LABELS[i % 3]
            past, base, objects = rng.choice(NLI_EVENTS)
            name, name2 = rng.sample(names, 2)
            place, place2 = rng.sample(places, 2)
            obj, obj2 = rng.sample(LEXICON[objects][1], 2)
            values = {
                "name": name + "/PROPN",
                "name2": name2 + "/PROPN",
                "place": place + "/NOUN",
                "place2": place2 + "/NOUN",
                "obj": obj + "/NOUN",
                "obj2": obj2 + "/NOUN",
                "verb": past + "/VERB",
                "verb_base": base + "/VERB",
                "pron": rng.choice(("she", "he")),
                "day": rng.choice(LEXICON["day"][1]) + "/NOUN",
            }
            premise = self.fill("{name} {verb} the {obj} in the {place} .".format(**values), rng)
            hypothesis = self.fill(rng.choice(NLI_TEMPLATES[label][split]).format(**values), rng)
            out.append(NLIPair(premise.tokens, hypothesis.tokens, NLI_LABELS.index(label)))
        rng.shuffle(out)
        return out

    def _profile(self, rng: random.Random, name: str, split: str) -> tuple[list[Sentence], dict, dict]:
        """Sentences about one person; for each fact, the sentence that states it and the answer's tokens; and
        the person's fixed slots."""
        fixed = {"name": name, "pet": rng.choice(LEXICON["pet"][1]), "petname": rng.choice(LEXICON["petname"][1])}
        facts = rng.sample(list(QA_FACTS), rng.randint(3, len(QA_FACTS)))
        sentences, answers = [], {}
        for fact in facts:
            template = QA_FACTS[fact][0][split]
            item = next(i for i in template.split() if i.startswith("{answer:"))
            slots = item[len("{answer:") : -1].split("+")
            answer = tuple(fixed.get(slot) or rng.choice(LEXICON[slot][1]) for slot in slots)
            tagged = " ".join(f"{w}/{LEXICON[slot][0]}" for w, slot in zip(answer, slots))
            sentences.append(self.fill(template.replace(item, tagged), rng, fixed))
            answers[fact] = (sentences[-1], answer)
        return sentences, answers, fixed

    def qa(self, n: int, split: str = "train", questions: str | None = None) -> list[QAExample]:
        """Passages about two people and a question about one of them; the answer is a span of the passage. The
        passage sentences come from ``split``'s templates, the questions' wording from ``questions``'s (by default
        the same split): ``qa(n, "heldout", questions="train")`` asks familiar questions about new sentences."""
        questions = questions or split
        _check_split(questions)
        # Another stream for mixed splits: held-out wording must not come with the training passages themselves.
        rng = self._rng("qa" if questions == split else f"qa/questions-{questions}", split)
        out = []
        while len(out) < n:
            a, b = rng.sample(LEXICON["name"][1], 2)
            sa, answers, fixed = self._profile(rng, a, split)
            sb = self._profile(rng, b, split)[0]
            sentences = sa + sb
            rng.shuffle(sentences)
            fact = rng.choice(list(answers))
            passage = [w for s in sentences for w in s.tokens]
            target, ans = answers[fact]
            offset = sum(len(s.tokens) for s in sentences[: sentences.index(target)])
            start = offset + next(i for i in range(len(target.tokens)) if target.tokens[i : i + len(ans)] == ans)
            question = QA_FACTS[fact][1][questions].replace("{name}", a).replace("{pet}", fixed["pet"])
            question = " ".join(item.split("/")[0] for item in question.split())  # drop explicit tags
            out.append(QAExample(tuple(passage), tuple(question.split()), start, start + len(ans) - 1))
        return out

    def vocabulary(self) -> set[str]:
        """Every word the grammar can produce."""
        words = {w for _, ws in LEXICON.values() for w in ws} | set(TAGS)
        return words
