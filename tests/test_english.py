"""The real-English corpus (word2bert.data.english) and the held-out sense benchmark's probe."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch

from word2bert.data import (
    MATCHED_SENTENCES,
    PLAIN_SENSES,
    SEED_SENTENCES,
    SenseOccurrence,
    WordNet,
    occurrences_of,
    plain_sense_occurrences,
    tokenize,
    wordnet_available,
)
from word2bert.data import english as en
from word2bert.embedding import word_vectors
from word2bert.probes import (
    chance_level,
    english_sense_probe,
    leave_one_out_sense_probe,
    nearest_sense_accuracy,
    split_by_sense,
)
from word2bert.reporting import cosine_table, plot_senses

needs_wordnet = pytest.mark.skipif(not wordnet_available(), reason="WordNet 3.0 is not installed (make setup)")
needs_gcide = pytest.mark.skipif(not en.GCIDE.is_file(), reason="GCIDE is not installed (Debian's dict-gcide)")

MOUSE = """Mouse \\Mouse\\ (mous), n.; pl. {Mice} (m[imac]s). [OE. mous, mus,
   AS. m[=u]s, pl. m[=y]s; akin to D. muis, G. maus. [root]277. Cf.
   {Muscle}, {Musk}.]
   1. (Zool.) Any one of numerous species of small rodents
      belonging to the genus {Mus} and various related genera of
      the family {Muridae}.
      [1913 Webster]"""


def test_a_dictionary_head_becomes_its_definition():
    text = en.gcide_paragraph(MOUSE, first=True)
    assert en.sentences_of(text) == [
        "any one of numerous species of small rodents belonging to the genus mus and various related genera of "
        "the family muridae .".split()
    ]


@pytest.mark.parametrize(
    "paragraph, sentence",
    [
        ('3. To tear, as a cat devours a mouse. [Obs.] "[Death] mousing the flesh of men." --Shak.', "to tear"),
        ("(a) A knob made on a rope with spun yarn.\n  [1913 Webster]", "a knob made on a rope with spun yarn ."),
        ('The br[i^]dge over the r[=i]ver was m["u]ch longer than we thought.', "the bridge over the river was"),
        ("2. (Naut.) To furnish with a mouse; to secure it by means of a mousing.", "to furnish with a mouse ;"),
    ],
)
def test_markup_accents_labels_numbers_and_attributions_are_removed(paragraph, sentence):
    (first, *_) = en.sentences_of(en.gcide_paragraph(paragraph))
    assert " ".join(first).startswith(sentence)
    assert not {"[", "]", "{", "}", "obs", "shak", "naut", "webster", "1913"} & set(first)


@pytest.mark.parametrize(
    "text",
    [
        "See under Meadow, and Harvest mouse, under Harvest.",  # a cross-reference
        "Field mouse, Flying mouse, Deer mouse, House mouse, Harvest mouse, Meadow mouse.",  # a list of headwords
        "A mouse.",  # a fragment
        "The Greek word ? was read as something else entirely.",  # a character GCIDE could not write
    ],
)
def test_fragments_lists_and_cross_references_are_not_sentences(text):
    assert en.sentences_of(text) == []


def test_duplicates_and_near_duplicates_are_dropped_once_seen():
    quote = "the quality of mercy is not strained it droppeth as the gentle rain from heaven".split()
    docs = [
        [quote, "a small rodent .".split()],
        [quote + ["."]],  # the same but for punctuation
        [quote[3:13]],  # a shorter excerpt: every 8-gram seen before, a near-duplicate
        [quote[:10] + ["new", "words", "here"]],  # new 8-grams: kept
    ]
    stats = en.CorpusStats()
    out = en.deduplicate(docs, stats)
    assert out == [docs[0], docs[3]]
    assert (stats.duplicates, stats.near_duplicates) == (1, 1)


@pytest.mark.slow
@needs_wordnet
def test_the_benchmark_is_held_out_of_the_corpus():
    """No sentence of the WordNet sense benchmark is in the pre-training text, from WordNet or any other source,
    and every installed source gives text."""
    docs, stats = en.english_documents()
    benchmark = {en._normal(o.tokens) for o in WordNet().sense_occurrences(pos=None)}
    assert len(benchmark) > 3000
    text = {en._normal(s) for d in docs for s in d}
    assert not benchmark & text
    assert stats.held_out >= len(benchmark)
    for source, sizes in stats.sources.items():
        assert sizes["tokens"] > 100_000, source
    assert "wordnet" in stats.sources


def test_the_cleaned_text_is_kept_on_disk_and_cleaned_again_when_a_source_changes(tmp_path, monkeypatch):
    """english_documents() keeps its result under WORD2BERT_CACHE: a second call reads it instead of cleaning; a
    changed source file, or an unreadable cache file, cleans again; a cache that cannot be written is no error."""
    fortunes = tmp_path / "fortunes"
    fortunes.mkdir()
    (fortunes / "wisdom").write_text(
        "The early bird gets the worm, they say.\n%\nA stitch in time saves nine stitches.\n%\n", encoding="utf-8"
    )
    monkeypatch.setattr(en, "FORTUNES", fortunes)
    monkeypatch.setattr(en, "GCIDE", tmp_path / "no-gcide.dz")
    monkeypatch.setenv("WORDNET_DIR", str(tmp_path / "no-wordnet"))
    monkeypatch.setenv("WORD2BERT_CACHE", str(tmp_path / "cache"))
    cleaned = []
    clean = en._clean
    monkeypatch.setattr(en, "_clean", lambda *a: cleaned.append(1) or clean(*a))

    first = en.english_documents()
    assert first[0] == [  # a document per fortune
        [["the", "early", "bird", "gets", "the", "worm", ",", "they", "say", "."]],
        [["a", "stitch", "in", "time", "saves", "nine", "stitches", "."]],
    ]
    assert first[1].missing == ["wordnet", "gcide"] and len(list((tmp_path / "cache").iterdir())) == 1
    assert en.english_documents() == first and len(cleaned) == 1, "the second call reads the cache"

    (fortunes / "wisdom").write_text("Where there is smoke there is fire.\n%\n", encoding="utf-8")
    assert en.english_documents()[0] == [[["where", "there", "is", "smoke", "there", "is", "fire", "."]]]
    assert len(cleaned) == 2, "a changed source is cleaned again"

    for cache in (tmp_path / "cache").iterdir():
        cache.write_text("not what was written", encoding="utf-8")
    assert en.english_documents()[0] == [[["where", "there", "is", "smoke", "there", "is", "fire", "."]]]
    assert len(cleaned) == 3

    monkeypatch.setenv("WORD2BERT_CACHE", str(tmp_path / "no-write" / "x"))
    (tmp_path / "no-write").write_text("a file, not a folder", encoding="utf-8")
    assert en.english_documents()[0] == [[["where", "there", "is", "smoke", "there", "is", "fire", "."]]]


@pytest.mark.slow
@needs_gcide
def test_gcide_gives_millions_of_words_without_markup():
    entries = list(en.gcide_entries())
    sentences = [s for e in entries[::50] for p in e for s in en.sentences_of(p)]
    assert len(entries) > 100_000 and len(sentences) > 2000
    assert sum(map(len, sentences)) * 50 > 3_000_000
    assert not any({"[", "]", "{", "}", "\\"} & set(s) for s in sentences)


def occurrence(word: str, sense: str, k: int) -> SenseOccurrence:
    return SenseOccurrence((word, f"w{k}", sense), 0, word, sense, "test", sense)


def test_split_by_sense_puts_every_sense_on_both_sides_and_no_sentence_on_two():
    occ = [occurrence(w, f"{w}-{s}", k) for w in "ab" for s in range(3) for k in range(2 + s)]
    for seed in range(5):
        train, test = split_by_sense(occ, seed)
        assert {o.sense for o in train} == {o.sense for o in test} == {o.sense for o in occ}
        assert not {o.tokens for o in train} & {o.tokens for o in test}
        assert sorted(map(id, train + test)) == sorted(map(id, occ))
    assert split_by_sense(occ, 0) == split_by_sense(list(reversed(occ)), 0), "independent of the input's order"


def test_chance_level_is_one_over_each_words_senses():
    occ = [occurrence("a", "a1", 0), occurrence("a", "a2", 1), *(occurrence("b", f"b{s}", s) for s in range(4))]
    assert chance_level(occ) == pytest.approx((2 * 1 / 2 + 4 * 1 / 4) / 6)


class _Embedder:
    """Layer 0 is the word alone; layer 1 says the sense (the sentence's last token) plus noise."""

    def __init__(self, occurrences):
        self.senses = sorted({o.sense for o in occurrences})
        self.generator = torch.Generator().manual_seed(0)

    def embed_sentence(self, tokens):
        word = torch.zeros(len(self.senses))
        word[hash(tokens[0]) % len(self.senses)] = 1
        sense = torch.zeros(len(self.senses))
        sense[self.senses.index(tokens[2])] = 1
        noise = 0.1 * torch.randn(len(self.senses), generator=self.generator)
        return torch.stack([word, sense + noise])[:, None].expand(2, len(tokens), -1)


def test_the_probe_finds_senses_where_the_vectors_have_them():
    occ = [occurrence(w, f"{w}-{s}", k) for w in "abc" for s in range(2) for k in range(4)]
    result = english_sense_probe(_Embedder(occ), occ, seeds=(0, 1))
    assert result.scores.shape == (2, 2)
    assert result.mean[1] == 1.0
    assert result.mean[0] == pytest.approx(chance_level(occ)), "one vector per word: ties go to one sense"


class _Lookup:
    """Layer 0: one vector for the word everywhere; layer 1: each sentence's own vector (its second token's)."""

    def __init__(self, vectors: dict[str, tuple[float, float]]):
        self.vectors = vectors

    def embed_sentence(self, tokens):
        layer_1 = torch.tensor(self.vectors[tokens[1]])
        return torch.stack([torch.ones(2), layer_1])[:, None].expand(2, len(tokens), -1)


def test_leave_one_out_holds_each_occurrence_out_of_its_own_sense():
    """a is nearer its sense's centroid when it is in it, nearer the other sense's when it is not: it counts wrong."""
    occ = [occurrence("m", sense, k) for sense, k in (("x", 0), ("x", 1), ("y", 2), ("y", 3))]
    vectors = {"w0": (1.0, 0.1), "w1": (0.0, 1.0), "w2": (1.0, -1.0), "w3": (1.0, -0.5)}
    result = leave_one_out_sense_probe(_Lookup(vectors), occ)
    assert result.scores.shape == (1, 2)
    assert result.mean == [0.5, 0.75], "layer 0 ties (chance); in layer 1 only w0 is wrong"
    with_itself = nearest_sense_accuracy(
        torch.tensor(list(vectors.values())), occ, torch.tensor([vectors["w0"]]), occ[:1]
    )
    assert with_itself == 1.0, "w0 left in its own centroid would have counted right"


def test_matched_sentences_share_equally_many_words_whichever_two_are_compared():
    """Same-sense and different-sense pairs share the same number of words, and the word stands at the same place in
    every sentence: neither word overlap nor position can tell the senses apart."""
    for word, sentences in MATCHED_SENTENCES.items():
        occ = occurrences_of({word: sentences})
        pairs = list(itertools.combinations(occ, 2))
        shared = {(a.sense == b.sense, len(set(a.tokens) & set(b.tokens))) for a, b in pairs}
        assert {n for same, n in shared if same} == {n for same, n in shared if not same}, (word, sorted(shared))
        assert len({n for _, n in shared}) == 1, f"{word}: every pair shares the frame's words and no others"
        assert len({o.index for o in occ}) == 1, f"{word}: at the same position in every sentence"
        assert all(o.tokens.count(word) == 1 for o in occ)
        senses = Counter(sentences.values())
        assert set(senses) == set(PLAIN_SENSES[word]) and len(set(senses.values())) == 1, "two senses, balanced"
    seeds = list(SEED_SENTENCES["apple"].items())[:2]
    assert all(MATCHED_SENTENCES["apple"][text] == sense for text, sense in seeds), "the seeds' apple pair is in it"


def test_the_plain_sentences_have_their_word_once_two_senses_and_six_sentences_each():
    occ = plain_sense_occurrences()
    assert len(occ) == sum(len(v) for senses in PLAIN_SENSES.values() for v in senses.values()) == 12 * 2 * 6
    for o in occ:
        assert o.tokens.count(o.word) == 1 and o.tokens[o.index] == o.word, o.tokens
        assert o.sense.startswith(o.word + ".")
    assert len({o.tokens for o in occ}) == len(occ), "no sentence twice"
    assert chance_level(occ) == 0.5


@pytest.mark.slow
@needs_wordnet
def test_the_plain_sentences_are_not_in_the_corpus():
    docs, _ = en.english_documents(sources=("wordnet",))
    text = {en._normal(s) for d in docs for s in d}
    assert not {en._normal(tokenize(t)) for senses in PLAIN_SENSES.values() for v in senses.values() for t in v} & text


class _Counting:
    """Layer 0: the word alone; layer 1: the word plus the sentence's length (a stand-in for context)."""

    def embed_sentence(self, tokens):
        word = torch.tensor([[float(len(t)), 1.0, 0.0] for t in tokens])
        context = word + torch.tensor([0.0, 0.0, float(len(tokens))])
        return torch.stack([word, context])


def test_word_vectors_take_the_word_in_each_sentence_and_say_when_it_is_missing():
    vectors = word_vectors(_Counting(), "mouse", ["Your mouse likes cheese", "buy a new mouse for your computer"])
    assert vectors.shape == (2, 2, 3)
    assert torch.equal(vectors[0, 0], vectors[0, 1]) and not torch.equal(vectors[1, 0], vectors[1, 1])
    with pytest.raises(ValueError, match="'mouse' is not a word of 'a mousetrap'"):
        word_vectors(_Counting(), "mouse", ["a mousetrap"])


def test_the_cosine_table_letters_the_sentences_and_has_a_row_per_layer_and_a_column_per_pair():
    sentences = ["your mouse likes cheese", "buy a new mouse for your computer", "a mouse ran"]
    text = cosine_table(_Counting(), "mouse", sentences).splitlines()
    assert text[:3] == [f"- **{letter}**: {s}" for letter, s in zip("ABC", sentences)]
    table = text[4:]
    assert table[0] == "| layer | A and B | A and C | B and C |"
    assert len(table) == 2 + 2, "a row per layer: narrow enough for a phone"
    rows = [line.strip("| ").split(" | ") for line in table[2:]]
    assert rows[0] == ["0", "1.000", "1.000", "1.000"], "a static layer: the same vector in every sentence"
    assert all(float(c) < 1 for c in rows[1][1:])


def test_the_cosine_table_says_in_which_layers_the_senses_come_apart():
    sentences = ["a mouse ran", "the mouse likes cheese", "one mouse ran"]  # lengths 3, 4, 3
    table = cosine_table(_Counting(), "mouse", sentences, ["animal", "device", "animal"])
    lines = table.splitlines()
    assert lines[0] == "- **A** (animal): a mouse ran"
    assert lines[4] == "| layer | A and B: senses differ | A and C: same sense | B and C: senses differ |"
    # layer 0 is static (a tie is not closer); in layer 1 the same-sense pair, of equal lengths, is identical
    assert lines[-1] == (
        "*mouse*: in every layer above layer 0, each same-sense pair is closer than each pair of different senses."
    )

    class _Mixed(_Counting):
        def embed_sentence(self, tokens):
            word, context = super().embed_sentence(tokens)
            return torch.stack([word, context, word])

    assert cosine_table(_Mixed(), "mouse", sentences, ["animal", "device", "animal"]).endswith(
        "*mouse*: each same-sense pair is closer than each pair of different senses in layer 1, not in layer 2."
    )
    swapped = cosine_table(_Counting(), "mouse", sentences, ["animal", "animal", "device"])
    assert (
        swapped.splitlines()[-1]
        == "*mouse*: in no layer is each same-sense pair closer than each pair of different senses."
    )

    class _Context(_Counting):
        """Three layers: the word with its position (the sentence's length stands in for it), then context twice."""

        def embed_sentence(self, tokens):
            word, context = super().embed_sentence(tokens)
            return torch.stack([context, context, context])

    assert cosine_table(_Context(), "mouse", sentences, list("xyx")).endswith(
        "in every layer above layer 0, each same-sense pair is closer than each pair of different senses. (Layer 0 "
        "orders them too, but it has read no context, only where the word stands: not counted.)"
    )

    class _PositionOnly(_Counting):
        def embed_sentence(self, tokens):
            word, context = super().embed_sentence(tokens)
            return torch.stack([context, word])

    assert cosine_table(_PositionOnly(), "mouse", sentences, list("xyx")).endswith(
        "in no layer is each same-sense pair closer than each pair of different senses. (Layer 0 orders them too, "
        "but it has read no context, only where the word stands: not counted.)"
    ), "a layer 0 that orders the pairs by position is never a success"
    for senses in (list("xxx"), list("xyz"), list("xy")):
        with pytest.raises(ValueError, match="a pair that shares a sense and a pair that does not"):
            cosine_table(_Counting(), "mouse", sentences, senses)


def test_the_seed_sentences_are_two_senses_with_a_third_sentence_from_the_plain_set():
    for word, senses in SEED_SENTENCES.items():
        first, second, third = senses.items()
        assert first[1] == third[1] != second[1] and {first[1], second[1]} == set(PLAIN_SENSES[word])
        assert third[0] in PLAIN_SENSES[word][third[1]]
        assert all(word in tokenize(sentence) for sentence in senses)


def test_plot_senses_draws_one_colour_per_sense():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    occ = [occurrence(w, f"{w}.{s}", k) for w in "ab" for s in ("x", "y") for k in range(3)]
    _, axes = plt.subplots(1, 2)
    plot_senses(_Embedder(occ), occ, ["a", "b"], 1, axes)
    assert [len(ax.collections) for ax in axes] == [2, 2]
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["x", "y"]
    plt.close("all")


def test_the_sense_margin_is_the_closest_same_sense_pair_against_the_closest_other_pair():
    from word2bert.reporting import sense_margins, word_cosines

    cosines = torch.tensor([[[1.0, 0.2, 0.9], [0.2, 1.0, 0.4], [0.9, 0.4, 1.0]]])  # one layer; A and C share a sense
    assert torch.allclose(sense_margins(cosines, list("xyx")), torch.tensor([0.9 - 0.4]))
    assert torch.allclose(sense_margins(cosines, list("xxy")), torch.tensor([0.2 - 0.9])), "a different pair closer"
    static = word_cosines(_Counting(), "mouse", ["a mouse ran", "the mouse likes cheese", "one mouse ran"])
    assert static.shape == (2, 3, 3) and sense_margins(static, list("xyx"))[0] == 0, "one vector: every pair alike"
    with pytest.raises(ValueError, match="a pair that shares a sense and a pair that does not"):
        sense_margins(cosines, list("xyz"))


def test_the_thesis_figure_has_a_row_per_model_and_the_margins_a_panel_per_model():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from word2bert.probes import ProbeResult
    from word2bert.reporting import plot_layer_scores, plot_sense_margins, plot_thesis, sense_margin_table

    class _Static:
        def embed_sentence(self, tokens):
            return torch.tensor([[float(len(t)), 1.0, 0.0] for t in tokens])[None]

    sentences = {"a mouse ran": "animal", "the mouse likes cheese": "device", "one mouse ran": "animal"}
    models = {"static": _Static(), "contextual": _Counting(), "a third": _Counting()}
    fig = plot_thesis(models, "mouse", sentences)
    assert len(fig.axes) == 2 * len(models), "a row per model: arrows and a grid"
    assert "A = B" in [t.get_text() for t in fig.axes[0].texts], "a static vector: one arrow for both sentences"
    assert {"A", "B"} <= {t.get_text() for t in fig.axes[2].texts}
    with pytest.raises(ValueError, match="two different senses"):
        plot_thesis(models, "mouse", {"a mouse ran": "animal", "one mouse ran": "animal", "the mouse": "device"})
    margins = sense_margin_table(models, {"mouse": sentences})
    assert margins["static"]["mouse"].tolist() == [0.0] and len(margins["contextual"]["mouse"]) == 2
    fig = plot_sense_margins(margins, "title")
    assert [ax.get_title() for ax in fig.axes] == list(models)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0"], "whole layers only"
    _, ax = plt.subplots()
    plot_layer_scores({"a": ProbeResult("a", torch.tensor([[0.5, 0.9], [0.5, 0.8]]))}, ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "chance"]
    plt.close("all")


def test_the_per_layer_table_has_a_row_per_model_and_test_and_marks_missing_layers():
    from word2bert.probes import ProbeResult
    from word2bert.reporting import per_layer_table

    halves = ProbeResult("h", torch.tensor([[0.5, 0.7], [0.5, 0.9]]))
    once = ProbeResult("o", torch.tensor([[0.5, 0.75, 1.0]]))
    lines = per_layer_table({("a", "plain"): halves, ("b", "plain"): once}).splitlines()
    assert lines[0] == "| model | test | layer 0 | layer 1 | layer 2 |"
    assert lines[2] == "| a | plain | 0.500 ± 0.000 | 0.800 ± 0.100 | — |", "mean ± std over seeds; a layer it lacks"
    assert lines[3] == "| b | plain | 0.500 | 0.750 | 1.000 |", "one score per layer: no spread to show"
