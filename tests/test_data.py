"""The toy world, WordNet reader and vocabulary: determinism, splits, and the gold annotations' consistency."""

import itertools
from collections import Counter

import pytest

from word2bert.data import (
    NLI_LABELS,
    POLYSEMES,
    POS_TAGS,
    ToyWorld,
    Vocab,
    WordNet,
    WordNetNotFound,
    pretraining_documents,
    tokenize,
    toyworld,
    toyworld_grammar,
    wordnet_available,
)
from word2bert.data.wordnet import parse_line

needs_wordnet = pytest.mark.skipif(
    not wordnet_available(), reason="WordNet 3.0 not installed (apt-get install wordnet-base)"
)


def test_same_seed_same_corpus_and_prefix_property():
    a, b, c = ToyWorld(0), ToyWorld(0), ToyWorld(1)
    assert a.corpus(5_000) == b.corpus(5_000)
    assert a.corpus(5_000) != c.corpus(5_000)
    assert a.sentences(50) == a.sentences(100)[:50], "asking for fewer examples must give a prefix"


@pytest.mark.slow
def test_million_tokens_from_a_known_vocabulary():
    world = ToyWorld(0)
    docs = world.corpus(1_000_000)
    tokens = [w for d in docs for s in d for w in s]
    assert 1_000_000 <= len(tokens) < 1_001_000
    unknown = set(tokens) - world.vocabulary()
    assert not unknown, f"the corpus uses words the grammar does not list: {sorted(unknown)[:10]}"
    assert all(2 <= len(d) for d in docs), "documents need at least two sentences for next-sentence prediction"


def test_every_polyseme_has_two_senses_cued_on_both_sides_in_both_splits():
    assert len(POLYSEMES) >= 10 and all(len(s) == 2 for s in POLYSEMES.values())
    for split in ("train", "heldout"):
        cues = Counter((w, s, c) for w, s, c, _ in toyworld._sense_templates(split))
        for word, senses in POLYSEMES.items():
            for sense in senses:
                for cue in ("left", "right"):
                    assert cues[(word, sense, cue)] >= 1, (split, word, sense, cue)


def test_heldout_templates_are_disjoint_from_training_templates():
    train = {t for *_, t in toyworld._sense_templates("train")}
    heldout = {t for *_, t in toyworld._sense_templates("heldout")}
    assert heldout and not train & heldout
    seen = {s.template for s in ToyWorld(0).sentences(2_000, "train")}
    assert not seen & heldout
    for part in (0, 1):  # passage sentences, questions
        train_qa = {facts[part]["train"] for facts in toyworld_grammar.QA_FACTS.values()}
        assert not train_qa & {facts[part]["heldout"] for facts in toyworld_grammar.QA_FACTS.values()}
    assert not set(toyworld_grammar.SENTIMENT_TEMPLATES["train"]) & set(toyworld_grammar.SENTIMENT_TEMPLATES["heldout"])


def test_right_cue_templates_put_nothing_sense_specific_before_the_word():
    # In a "right" template the words before the polyseme must be neutral (function words and general verbs)
    # or occur in the other sense's templates too, so that no left-to-right reader can know the sense yet.
    neutral = {
        "the",
        "a",
        "an",
        "some",
        "every",
        "is",
        "was",
        "saw",
        "heard",
        "said",
        "liked",
        "loves",
        "found",
        "held",
        "took",
        "little",
    }
    for word, senses in toyworld_grammar.SENSE_TEMPLATES.items():
        for sense, templates in senses.items():
            other = next(s for s in senses if s != sense)
            other_words = {i.split("=")[0].split("/")[0] for _, t in senses[other] for i in t.split()}
            for cue, t in templates:
                if cue != "right":
                    continue
                prefix = t.split(f"{word}={sense}")[0].split()
                specific = [
                    i
                    for i in prefix
                    if not i.startswith("{") and i.split("/")[0] not in other_words and i not in neutral
                ]
                assert not specific, f"{t!r}: {specific} before {word!r} give the sense away"


def test_sentences_carry_one_tag_per_token_and_senses_at_polysemes():
    for s in ToyWorld(0).sentences(500) + ToyWorld(0).sentences(200, "heldout"):
        assert len(s.tokens) == len(s.tags) == len(s.senses)
        assert set(s.tags) <= set(POS_TAGS)
        for tok, sense in zip(s.tokens, s.senses):
            if sense is not None:
                word, meaning = sense.split(".")
                assert tok == word and meaning in POLYSEMES[word]


def test_sense_occurrences_are_balanced_and_point_at_the_word():
    occ = ToyWorld(0).sense_occurrences(10, "heldout")
    counts = Counter(o.sense for o in occ)
    assert len(counts) == sum(len(s) for s in POLYSEMES.values())
    assert set(counts.values()) == {10}
    assert Counter(o.cue for o in occ) == Counter({"left": len(occ) // 2, "right": len(occ) // 2})
    for o in occ:
        assert o.tokens[o.index] == o.word and o.sense.startswith(o.word + ".")


def test_sentiment_is_balanced_and_not_readable_from_adjectives_alone():
    data = ToyWorld(0).sentiment(2_000)
    assert Counter(x.label for x in data) == Counter({0: 1_000, 1: 1_000})
    good = set(toyworld_grammar.LEXICON["pos_adj"][1])
    bad = set(toyworld_grammar.LEXICON["neg_adj"][1])
    # A reader that counts adjectives must get a good share wrong: negation and "but" flip them.
    wrong = sum((sum(w in good for w in x.tokens) > sum(w in bad for w in x.tokens)) != bool(x.label) for x in data)
    assert 0.2 < wrong / len(data) < 0.6


def test_nli_pairs_are_balanced_over_three_labels():
    data = ToyWorld(0).nli(900, "heldout")
    assert Counter(x.label for x in data) == Counter({i: 300 for i in range(len(NLI_LABELS))})
    assert all(x.premise != x.hypothesis for x in data)


def test_qa_answers_are_spans_of_the_passage_about_the_asked_person():
    for split in ("train", "heldout"):
        for x in ToyWorld(0).qa(300, split):
            assert 0 <= x.start <= x.end < len(x.passage)
            assert x.answer and all(w not in (".", "?") for w in x.answer)
            asked = next(w for w in x.question if w in toyworld_grammar.LEXICON["name"][1])
            # The answer comes from a sentence about the asked person.
            sentence_start = max(i + 1 for i in range(-1, x.start) if i == -1 or x.passage[i] == ".")
            sentence = x.passage[sentence_start : x.passage.index(".", x.end) + 1]
            assert asked in sentence, (x.question, sentence)


def test_vocab_specials_unknowns_and_round_trip(tmp_path):
    v = Vocab.build([["b", "a", "b"], ["c", "b", "a"]], min_count=1)
    assert v.itos[:4] == list(Vocab.SPECIALS)
    assert v.itos[4:] == ["b", "a", "c"] and v.counts[4:] == [3, 2, 1]
    assert v.encode(["a", "zzz"]) == [v.stoi["a"], v.unk_id]
    assert v.decode(v.encode(["c", "b"])) == ["c", "b"]
    assert len(Vocab.build([["b", "a", "b", "c"]], max_size=5)) == 5
    assert len(Vocab.build([["b", "a", "b", "c"]], min_count=2)) == 5
    v.save(tmp_path / "v.json")
    w = Vocab.load(tmp_path / "v.json")
    assert w.itos == v.itos and w.counts == v.counts


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("The mouse's tail, twice.") == ["the", "mouse's", "tail", ",", "twice", "."]


def test_parse_wordnet_line():
    line = (
        "02330245 05 n 02 mouse 0 computer_mouse 0 003 @ 02329401 n 0000 | any of numerous small rodents; "
        '"the mouse ran away"; "a mouse squeaked"  \n'
    )
    s = parse_line(line, "n")
    assert s.id == "02330245-n" and s.lemmas == ("mouse", "computer mouse")
    assert s.definition == "any of numerous small rodents"
    assert s.examples == ("the mouse ran away", "a mouse squeaked")


def test_missing_wordnet_gives_a_clear_error(tmp_path):
    with pytest.raises(WordNetNotFound, match="wordnet-base"):
        WordNet(tmp_path)


@pytest.mark.slow
@needs_wordnet
def test_wordnet_has_glosses_and_sense_grouped_examples():
    wn = WordNet()
    assert len(wn.synsets) == 117_659  # WordNet 3.0's count of synsets
    occ = wn.sense_occurrences()
    assert len({o.word for o in occ}) > 50
    for o in occ[:200]:
        assert o.tokens[o.index] == o.word
    senses_per_word = Counter(o.word for o in {(o.word, o.sense): o for o in occ}.values())
    assert min(senses_per_word.values()) >= 2


@pytest.mark.slow
@needs_wordnet
def test_pretraining_mix_contains_wordnet_text():
    docs = pretraining_documents(50_000, wordnet_fraction=0.5)
    tokens = sum(len(s) for d in docs for s in d)
    world = ToyWorld(0).vocabulary()
    foreign = sum(len(s) for d in docs for s in d if not set(s) <= world)
    assert 49_000 < tokens < 52_000 and foreign > 10_000


def test_heldout_templates_only_use_words_the_training_text_has():
    # New sentence structures, but no new words: a model that never saw a cue word could not use it.
    seen = {w for d in ToyWorld(0).corpus(300_000) for s in d for w in s}
    for *_, template in toyworld._sense_templates("heldout"):
        words = {i.split("=")[0].split("/")[0] for i in template.split() if not i.startswith("{")}
        assert words <= seen, f"{template!r} uses words never seen in training: {sorted(words - seen)}"


def test_heldout_sentiment_uses_only_training_words_and_questions_carry_no_tags():
    seen = {w for x in ToyWorld(0).sentiment(3_000, "train") for w in x.tokens}
    for x in ToyWorld(0).sentiment(300, "heldout"):
        assert set(x.tokens) <= seen, sorted(set(x.tokens) - seen)
    for split in ("train", "heldout"):
        assert not any("/" in w for x in ToyWorld(0).qa(300, split) for w in x.question)


def test_heldout_passages_use_training_words_in_sentences_training_never_has():
    def sentences(passage):
        return {s.strip() for s in " ".join(passage).split(" .") if s.strip()}

    train = ToyWorld(0).qa(2_000, "train")
    seen = {w for x in train for w in x.passage + x.question} | {
        w for d in ToyWorld(0).corpus(300_000) for s in d for w in s
    }
    train_sentences = set().union(*(sentences(x.passage) for x in train))
    heldout = ToyWorld(0).qa(300, "heldout", questions="train")
    for x in heldout:
        assert set(x.passage) <= seen, sorted(set(x.passage) - seen)
        assert not sentences(x.passage) & train_sentences, sentences(x.passage) & train_sentences


def test_qa_test_splits_share_no_passage_with_the_training_examples():
    train = {x.passage for x in ToyWorld(0).qa(1_000, "train")}
    for passages, questions in (("train", "heldout"), ("heldout", "train"), ("heldout", "heldout")):
        test = ToyWorld(0).qa(200, passages, questions=questions)
        assert not {x.passage for x in test} & train, (passages, questions)


def test_topic_documents_are_the_documents_with_their_topics():
    world = ToyWorld(4)
    pairs = list(itertools.islice(world.iter_topic_documents("train"), 400))
    assert [d for _, d in pairs] == world.documents(400, "train")
    topics = [t for t, _ in pairs]
    assert set(topics) == set(toyworld_grammar.TOPICS) | {"reviews", "people"}, (
        "every kind of document, and no other, in 400"
    )
    sky_words = {"sky", "moon", "sun", "clouds", "telescope", "night"}
    share = {True: [], False: []}  # sentences that speak of the sky, in sky documents and in the others
    for topic, document in pairs:
        share[topic == "sky"] += [bool(sky_words & set(s.tokens)) for s in document]
    assert sum(share[True]) / len(share[True]) > 0.5 > 0.1 > sum(share[False]) / len(share[False]), share


def test_cue_sentences_are_balanced_and_the_right_cue_ones_share_their_words_prefix():
    from word2bert.data import LEFT_CUE, RIGHT_CUE, cue_sense_occurrences

    occurrences = cue_sense_occurrences()
    assert LEFT_CUE.keys() == RIGHT_CUE.keys()
    for cue, found in occurrences.items():
        assert {o.cue for o in found} == {cue} and all(o.tokens[o.index] == o.word for o in found)
        per_sense = Counter(o.sense for o in found)
        assert len(per_sense) == 2 * len(LEFT_CUE) and set(per_sense.values()) == {4}, per_sense
    for word, (prefix, _) in RIGHT_CUE.items():
        mine = [o for o in occurrences["right"] if o.word == word]
        assert {o.tokens[: o.index + 1] for o in mine} == {tuple(tokenize(prefix))}, word
    with pytest.raises(ValueError, match="must end with"):
        cue_sense_occurrences({}, {"bank": ("the bank of", {"river": ["the river"]})})
    with pytest.raises(ValueError, match="once"):
        cue_sense_occurrences({"bank": {"river": ["the bank by the bank"]}}, {})


def test_the_cache_folder_is_the_platforms_unless_named(monkeypatch, tmp_path):
    """$WORD2BERT_CACHE wins; otherwise platformdirs' user cache folder (on Linux, $XDG_CACHE_HOME/word2bert)."""
    import sys

    from word2bert.data.english import cache_dir

    monkeypatch.setenv("WORD2BERT_CACHE", str(tmp_path / "named"))
    assert cache_dir() == tmp_path / "named"
    monkeypatch.delenv("WORD2BERT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_dir() == tmp_path / "xdg" / "word2bert"
    assert cache_dir().name == "word2bert"
