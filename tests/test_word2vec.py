"""word2vec's pieces (subsampling, noise distribution, shrunk window, loss) and proof that SG and CBOW learn."""

import math

import pytest
import torch
import torch.nn as nn

from word2bert import word2vec as w2v
from word2bert import word_tests
from word2bert.data import ToyWorld, wordnet_available
from word2bert.testing import assert_frequency
from word2bert.vectors import KeyedVectors

needs_wordnet = pytest.mark.skipif(
    not wordnet_available(), reason="WordNet 3.0 not installed (apt-get install wordnet-base)"
)


@pytest.fixture(scope="module")
def sentences():
    return [s for doc in ToyWorld(0).corpus(60_000) for s in doc]


@pytest.fixture(scope="module")
def skipgram(sentences):
    return w2v.Word2Vec(sentences, vector_size=32, epochs=3, sg=1, progress=False)


@pytest.fixture(scope="module")
def cbow(sentences):
    # the C code's default learning rate for CBOW is 0.05
    return w2v.Word2Vec(sentences, vector_size=32, epochs=3, sg=0, alpha=0.05, progress=False)


def test_keep_probability_is_the_c_code_formula_and_drops_frequent_words_more():
    counts = torch.tensor([0.0, 1.0, 10.0, 1_000.0, 100_000.0])
    keep = w2v.keep_probability(counts, sample=1e-3)
    t = 1e-3 * counts.sum().item()
    for c, k in zip(counts.tolist()[1:], keep.tolist()[1:]):
        assert k == pytest.approx(min(1.0, (math.sqrt(c / t) + 1) * t / c), rel=1e-5)
    assert keep[0] == 1 and keep[1] == 1, "unseen and rare words are always kept"
    assert keep[3] < keep[2] and keep[4] < keep[3] < 1, "frequent words must be dropped more often"
    assert torch.all(w2v.keep_probability(counts, sample=0) == 1), "sample=0 turns subsampling off"


def test_noise_distribution_is_unigram_to_the_three_quarters():
    counts = torch.tensor([0, 1, 16, 81, 256])
    p = w2v.noise_distribution(counts)
    assert p.sum().item() == pytest.approx(1.0, abs=1e-6)
    expected = torch.tensor([0.0, 1.0, 8.0, 27.0, 64.0]) / 100
    torch.testing.assert_close(p, expected)
    with pytest.raises(ValueError):
        w2v.noise_distribution(torch.zeros(3))


@pytest.mark.parametrize("counts", [[0, 1, 16, 81, 256], [0, 0, 3, 0, 1, 1, 5000, 2], [7]])
def test_alias_table_draws_the_noise_distribution_exactly(counts):
    p = w2v.noise_distribution(torch.tensor(counts))
    keep, alias = w2v.alias_table(p)
    # every slot carries 1/V: what slot i keeps plus what the others give it is p_i
    mass = keep / len(p) + torch.zeros(len(p)).index_add_(0, alias, (1 - keep) / len(p))
    torch.testing.assert_close(mass, p, atol=1e-6, rtol=0)
    draws = w2v.sample_noise((keep, alias), (200_000,), torch.Generator().manual_seed(1))
    assert draws.shape == (200_000,) and draws.dtype == torch.long
    seen = torch.bincount(draws, minlength=len(p))
    assert torch.all(seen[p == 0] == 0), "a word of probability 0 (a special token) was drawn as noise"
    for k in range(len(p)):
        assert_frequency(int(seen[k]), len(draws), float(p[k]), f"noise word {k}")


def test_shrunk_window_radius_is_uniform_on_one_to_window():
    window, n = 5, 20_000
    positions, valid = w2v.shrunk_windows(torch.zeros(n, dtype=torch.long), window, torch.Generator().manual_seed(0))
    interior = valid[window:-window]
    radius = interior.sum(1) // 2
    assert torch.all(interior.sum(1) % 2 == 0), "a window is symmetric around its center"
    for b in range(1, window + 1):
        assert_frequency(int((radius == b).sum()), len(radius), 1 / window, f"radius {b}")
    offsets = (positions - torch.arange(n)[:, None]).abs()
    assert torch.all(offsets[valid] <= window), "no context beyond the window"
    assert torch.all((offsets[window:-window] <= radius[:, None]) == interior), "contexts are exactly those within b"


def test_windows_never_cross_sentences_and_pairs_with_window_one():
    ids = torch.tensor([10, 20, 30, 40, 50])
    sentence = torch.tensor([0, 0, 0, 1, 1])
    centers, contexts = w2v.skipgram_pairs(ids, sentence, 1, torch.Generator().manual_seed(0))
    assert sorted(zip(centers.tolist(), contexts.tolist())) == [
        (10, 20),
        (20, 10),
        (20, 30),
        (30, 20),
        (40, 50),
        (50, 40),
    ]
    inputs, mask, targets = w2v.cbow_examples(
        torch.tensor([1, 2, 3]), torch.tensor([0, 0, 1]), 2, torch.Generator().manual_seed(0)
    )
    assert targets.tolist() == [1, 2], "a one-word sentence has no context, so no CBOW example"
    assert inputs.shape == mask.shape == (2, 4)
    assert [sorted(inputs[k][mask[k]].tolist()) for k in range(2)] == [[2], [1]]


def test_negative_sampling_loss_worked_example_and_large_scores():
    h = torch.tensor([[1.0, 0.0]])
    target = torch.tensor([[2.0, 1.0]])
    noise = torch.tensor([[[1.0, 3.0], [-1.0, 0.0]]])
    log_sigmoid = lambda x: -math.log1p(math.exp(-x))  # noqa: E731
    expected = -(log_sigmoid(2.0) + log_sigmoid(-1.0) + log_sigmoid(1.0))
    assert w2v.negative_sampling_loss(h, target, noise).item() == pytest.approx(expected, rel=1e-6)
    masked = w2v.negative_sampling_loss(h, target, noise, torch.tensor([[True, False]]))
    assert masked.item() == pytest.approx(-(log_sigmoid(2.0) + log_sigmoid(-1.0)), rel=1e-6)
    big = torch.full((1, 2), 100.0, requires_grad=True)
    loss = w2v.negative_sampling_loss(big, -big, big[:, None])  # scores of -2e4: log σ must not underflow
    loss.backward()
    assert torch.isfinite(loss) and loss.item() == pytest.approx(4e4, rel=1e-6) and torch.isfinite(big.grad).all()


def test_learning_rate_falls_linearly():
    assert w2v.linear_learning_rate(0.025, 1e-4, 0.0) == 0.025
    assert w2v.linear_learning_rate(0.025, 1e-4, 0.5) == pytest.approx((0.025 + 1e-4) / 2)
    assert w2v.linear_learning_rate(0.025, 1e-4, 1.0) == pytest.approx(1e-4)


def test_most_similar_and_analogies_on_known_vectors():
    words = ["man", "woman", "king", "queen", "apple"]
    vectors = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [-1.0, 0.2, 0.0]])
    wv = KeyedVectors(words, vectors)
    assert wv.similarity("man", "woman") == pytest.approx(1 / math.sqrt(2))
    neighbours = wv.most_similar("man", topn=10)
    assert "man" not in [w for w, _ in neighbours] and len(neighbours) == 4
    assert [s for _, s in neighbours] == sorted((s for _, s in neighbours), reverse=True)
    answer = wv.most_similar(positive=["woman", "king"], negative=["man"], topn=4)
    assert answer[0][0] == "queen" and {w for w, _ in answer}.isdisjoint({"woman", "king", "man"})
    with pytest.raises(KeyError, match="not in vocabulary"):
        wv["zebra"]


def test_embed_sentence_shape_and_unknown_words(skipgram):
    out = skipgram.embed_sentence(["the", "zebra-unknown", "cat"])
    assert out.shape == (1, 3, 32)
    torch.testing.assert_close(out[0, 0], skipgram.wv["the"])
    assert torch.all(out[0, 1] == 0), "an unknown word gets the zero vector"


@pytest.mark.parametrize("name", ["skipgram", "cbow"])
def test_word2vec_learns_the_toy_worlds_categories(name, request):
    wv = request.getfixturevalue(name).wv
    categories = word_tests.toyworld_categories()
    animals = set(categories["animal"])
    animal_share = sum(n in animals for a in animals for n, _ in wv.most_similar(a, topn=5)) / (5 * len(animals))
    similarity = word_tests.similarity_accuracy(wv, word_tests.similarity_triples(categories))
    analogy = word_tests.analogy_accuracy(wv, word_tests.category_analogies(categories, n=300))
    chance = 1 / len(categories)
    # thresholds: half a point below what 60k tokens x 3 epochs reach (skip-gram: 0.7 / 0.88 / 0.46, CBOW:
    # 0.6 / 0.88 / 0.34), far above chance (0.5 for similarity, well under 0.1 for the others)
    assert animal_share > 0.5, f"{name}: only {animal_share:.2f} of an animal's 5 neighbours are animals"
    assert similarity > 0.8, f"{name}: similarity accuracy {similarity:.2f}"
    assert analogy > 0.25 > 2 * chance, f"{name}: category analogy accuracy {analogy:.2f}"


def test_same_seed_same_vectors():
    # as in gensim, one worker is what makes a run repeatable (threads interleave their updates differently)
    sentences = [s for doc in ToyWorld(1).corpus(5_000) for s in doc]
    a = w2v.Word2Vec(sentences, vector_size=8, epochs=1, workers=1, progress=False)
    b = w2v.Word2Vec(sentences, vector_size=8, epochs=1, workers=1, progress=False)
    torch.testing.assert_close(a.wv.vectors, b.wv.vectors, rtol=0, atol=0)


@pytest.mark.parametrize("sg", [1, 0])
def test_written_out_gradient_gives_the_vectors_autograd_gives(sg):
    # the fast path (sgd_step) against the plain one (forward, backward, torch.optim.SGD): same batches, so the
    # same vectors up to float rounding; a wrong sign, a missing noise mask or CBOW's error divided by the
    # context size would move them by far more
    sentences = [s for doc in ToyWorld(2).corpus(8_000) for s in doc]
    kw = dict(vector_size=16, epochs=2, sg=sg, min_count=1, workers=1, progress=False, alpha=0.05)
    plain = w2v.Word2Vec(sentences, autograd=True, **kw)
    fast = w2v.Word2Vec(**{k: v for k, v in kw.items() if k not in ("workers", "progress")})
    fast.build_vocab(sentences)
    start = fast.wv.vectors.clone()
    fast.train(sentences, workers=1, progress=False)
    moved = (fast.wv.vectors - start).norm(dim=1).mean() / start.norm(dim=1).mean()
    assert moved > 1, f"training moved the vectors by only {moved:.2f}x their start: the comparison would prove little"
    torch.testing.assert_close(fast.wv.vectors, plain.wv.vectors, rtol=0, atol=2e-5)
    torch.testing.assert_close(fast.model.output_vectors.weight, plain.model.output_vectors.weight, rtol=0, atol=2e-5)
    assert fast.loss_history == pytest.approx(plain.loss_history, rel=1e-5)


def test_cbow_takes_the_context_mean_forward_and_gives_each_context_word_the_full_error():
    """The C code's CBOW: h is the mean of the context vectors, but every context word moves by the error of h
    itself, not by that error over the context size (what plain autograd of a mean would give)."""
    torch.manual_seed(0)
    model = w2v.Word2VecModel(10, 6)
    nn.init.normal_(model.output_vectors.weight)
    inputs = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    targets, noise = torch.tensor([6, 7]), torch.tensor([[8, 9], [9, 8]])
    loss = model(inputs, targets, noise, mask)
    rows = model.input_vectors.weight
    hidden = torch.stack([rows[[1, 2, 3]].mean(0), rows[[4, 5]].mean(0)]).detach().requires_grad_()
    expected = w2v.negative_sampling_loss(hidden, model.output_vectors(targets), model.output_vectors(noise))
    torch.testing.assert_close(loss, expected)  # the mean goes forward
    loss.backward()
    expected.backward()
    grad = model.input_vectors.weight.grad.to_dense()
    for example, words in enumerate([[1, 2, 3], [4, 5]]):
        for w in words:  # the full error of h, once per context word
            torch.testing.assert_close(grad[w], hidden.grad[example])
    assert grad[0].abs().sum() == 0, "a padded slot of the context gets nothing"


def test_worker_threads_learn_as_one_worker_does():
    # Hogwild: threads share the tables without locks, as the C code and gensim do
    sentences = [s for doc in ToyWorld(0).corpus(60_000) for s in doc]
    threads = torch.get_num_threads()
    model = w2v.Word2Vec(sentences, vector_size=32, epochs=3, sg=1, workers=3, progress=False)
    assert torch.get_num_threads() == threads, "training must give back torch's thread count"
    categories = word_tests.toyworld_categories()
    similarity = word_tests.similarity_accuracy(model.wv, word_tests.similarity_triples(categories))
    assert similarity > 0.8, f"three workers: similarity accuracy {similarity:.2f} (one worker: about 0.88)"


def test_loss_history_falls(skipgram):
    history = skipgram.loss_history
    assert history[-1] < 0.8 * history[0], f"loss went from {history[0]:.3f} to {history[-1]:.3f}"


def test_save_load_round_trip(skipgram, tmp_path):
    path = skipgram.save(tmp_path / "w2v.safetensors")
    loaded = w2v.Word2Vec.load(path, device="cpu")
    assert loaded.config == skipgram.config and loaded.vocab.itos == skipgram.vocab.itos
    assert loaded.loss_history == skipgram.loss_history
    torch.testing.assert_close(loaded.wv.vectors, skipgram.wv.vectors.cpu(), rtol=0, atol=0)
    assert loaded.wv.most_similar("cat", topn=3) == skipgram.wv.most_similar("cat", topn=3)


def test_toyworld_categories_are_disjoint():
    categories = word_tests.toyworld_categories()
    words = [w for ws in categories.values() for w in ws]
    assert len(words) == len(set(words)) and all(len(ws) >= 3 for ws in categories.values())
    for a, b, c, answers in word_tests.category_analogies(categories, n=50, seed=3):
        kind = next(k for k, ws in categories.items() if b in ws)
        assert answers == set(categories[kind]) - {b} and a not in answers and c not in answers


@needs_wordnet
@pytest.mark.slow
def test_wordnet_tests_use_synonyms_and_plurals():
    from collections import Counter

    from word2bert.data import WordNet

    wordnet = WordNet()
    counts = Counter(w for s in wordnet.sentences() for w in s)
    words = [w for w, _ in counts.most_common(5000)]
    wv = KeyedVectors(words, torch.randn(len(words), 4, generator=torch.Generator().manual_seed(0)))
    triples, analogies = word_tests.wordnet_word_tests(wv, n=50)
    assert len(triples) == 50 and len(analogies) == 50
    for a, b, c in triples[:10]:
        assert any(a in s.lemmas and b in s.lemmas for s in wordnet.synsets), f"{a} and {b} share no synset"
    assert all(b == a + "s" and answers == {c + "s"} and c + "s" in wv for a, b, c, answers in analogies)
