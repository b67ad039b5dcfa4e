"""GloVe: co-occurrence counts, the weighting and the objective by hand, and proof that it learns."""

import warnings

import pytest
import torch

from word2bert import word_tests
from word2bert.data import ToyWorld, Vocab
from word2bert.glove import GloVe, cooccurrence_counts, glove_loss, glove_weighting


@pytest.fixture(scope="module")
def glove():
    sentences = [s for doc in ToyWorld(0).corpus(60_000) for s in doc]
    return GloVe(sentences, vector_size=32, epochs=40, progress=False)


def dense(rows, cols, values, size):
    out = torch.zeros(size, size)
    out[rows, cols] = values
    return out


def test_cooccurrence_counts_weight_by_inverse_distance_within_sentences():
    ids = torch.tensor([0, 1, 2, 0, 3])
    sentence = torch.tensor([0, 0, 0, 1, 1])
    x = dense(*cooccurrence_counts(ids, sentence, window=2, vocab_size=4), 4)
    expected = torch.zeros(4, 4)
    for i, j, v in [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 0.5), (0, 3, 1.0)]:
        expected[i, j] += v
        expected[j, i] += v
    torch.testing.assert_close(x, expected)
    x1 = dense(*cooccurrence_counts(ids, sentence, window=1, vocab_size=4), 4)
    assert x1[0, 2] == 0, "window 1 sees only neighbours"


def test_repeated_pairs_add_up():
    ids = torch.tensor([5, 6, 5, 6])
    rows, cols, values = cooccurrence_counts(ids, torch.zeros(4, dtype=torch.long), window=3, vocab_size=7)
    x = dense(rows, cols, values, 7)
    # 5-6 at distances 1 (three times) and 3 (once); 5-5 and 6-6 at distance 2
    assert x[5, 6].item() == pytest.approx(3 + 1 / 3) and x[5, 5].item() == pytest.approx(2 * 0.5)


def test_weighting_and_loss_by_hand():
    x = torch.tensor([1.0, 50.0, 100.0, 1000.0])
    torch.testing.assert_close(glove_weighting(x), torch.tensor([0.01**0.75, 0.5**0.75, 1.0, 1.0]))
    w, wt = torch.tensor([[1.0, 2.0]]), torch.tensor([[0.5, -1.0]])
    b, bt, xx = torch.tensor([0.1]), torch.tensor([0.2]), torch.tensor([10.0])
    error = (0.5 - 2.0) + 0.1 + 0.2 - torch.log(torch.tensor(10.0))
    expected = (10 / 100) ** 0.75 * error**2
    assert glove_loss(w, wt, b, bt, xx).item() == pytest.approx(expected.item(), rel=1e-6)


def test_glove_learns_the_toy_worlds_categories(glove):
    categories = word_tests.toyworld_categories()
    similarity = word_tests.similarity_accuracy(glove.wv, word_tests.similarity_triples(categories))
    purity = word_tests.neighbour_purity(glove.wv, categories)
    # 60k tokens x 40 epochs reach 0.88 and 0.59; chance is 0.5 and about 1/17
    assert similarity > 0.8, f"similarity accuracy {similarity:.2f}"
    assert purity > 0.45, f"only {purity:.2f} of a word's 5 neighbours share its category"
    assert glove.loss_history[-1] < 0.5 * glove.loss_history[0]


def test_vectors_are_w_plus_w_tilde_and_round_trip(glove, tmp_path):
    m = glove.model
    cat = glove.vocab.stoi["cat"]
    torch.testing.assert_close(glove.wv["cat"], (m.W.weight[cat] + m.W_tilde.weight[cat]).detach())
    loaded = GloVe.load(glove.save(tmp_path / "glove.safetensors"), device="cpu")
    assert loaded.config == glove.config and loaded.loss_history == glove.loss_history
    torch.testing.assert_close(loaded.wv.vectors, glove.wv.vectors.cpu(), rtol=0, atol=0)
    assert loaded.embed_sentence(["the", "cat"]).shape == (1, 2, 32)


def test_wv_is_built_once_and_again_after_training_and_the_warning_filter_is_left_alone():
    # gensim's model.wv is one object; ours used to rebuild the vocabulary dict and renormalise on every access
    sentences = [s for doc in ToyWorld(3).corpus(2_000) for s in doc]
    filters = list(warnings.filters)
    model = GloVe(sentences, vector_size=8, min_count=1, epochs=1, progress=False, device="cpu")
    assert warnings.filters == filters, "GloVe.train changed the process's warning filters"
    first = model.wv
    assert model.wv is first
    model.train(sentences, progress=False)
    assert model.wv is not first, "after training, wv shows the new vectors"
    torch.testing.assert_close(model.wv.vectors, model.word_vectors().detach()[len(Vocab.SPECIALS) :])
