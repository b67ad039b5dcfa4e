"""The shared measures: chance for static vectors, perfect scores where the answer is in the vectors."""

import pytest
import torch

from word2bert.data import POS_TAGS, SenseOccurrence, ToyWorld
from word2bert.embedding import embed_sentences, mean_pool_pieces
from word2bert.probes import control_tags, linear_probe_accuracy, nearest_sense_accuracy, pos_probe, sense_probe


class Static:
    """One fixed random vector per word type, like word2vec: the same in every sentence."""

    def __init__(self, dim: int = 8):
        self.dim, self.table = dim, {}

    def vector(self, word: str) -> torch.Tensor:
        if word not in self.table:
            self.table[word] = torch.randn(self.dim, generator=torch.Generator().manual_seed(len(self.table)))
        return self.table[word]

    def embed_sentence(self, tokens):
        return torch.stack([self.vector(w) for w in tokens])[None]


class Contextual(Static):
    """Layer 0 static, layer 1 the word plus the mean of its sentence: context decides the sense."""

    def embed_sentence(self, tokens):
        x = super().embed_sentence(tokens)[0]
        return torch.stack([x, x + x.mean(0, keepdim=True)])


def occ(word, sense):
    return SenseOccurrence((word,), 0, word, f"{word}.{sense}", "left", "t")


def test_nearest_sense_is_perfect_on_separated_clusters_and_chance_on_identical_vectors():
    train_occ = [occ("w", "a")] * 5 + [occ("w", "b")] * 5
    train = torch.cat([torch.randn(5, 4) * 0.1 + 5, torch.randn(5, 4) * 0.1 - 5])
    test_occ = [occ("w", "a"), occ("w", "b")]
    assert nearest_sense_accuracy(train, train_occ, torch.tensor([[5.0] * 4, [-5.0] * 4]), test_occ) == 1.0
    same = torch.ones(10, 4)
    assert nearest_sense_accuracy(same, train_occ, torch.ones(2, 4), test_occ) == 0.5


def test_static_vectors_score_exactly_chance_and_context_helps():
    static = sense_probe(Static(), seeds=(0,), n_train=6, n_test=6)
    assert static.mean == [0.5], "a static vector cannot tell senses apart: ties give chance on balanced senses"
    ctx = sense_probe(Contextual(16), seeds=(0, 1), n_train=20, n_test=20)
    assert ctx.scores.shape == (2, 2)
    assert ctx.mean[1] > 0.58 and ctx.best_layer() == 1, f"context should beat chance: {ctx}"


def test_linear_probe_separates_separable_classes():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 5, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    assert linear_probe_accuracy(x[:200], y[:200], x[200:], y[200:], num_classes=4) > 0.9
    assert linear_probe_accuracy(x[:200], y[torch.randperm(300, generator=g)][:200], x[200:], y[200:], 4) < 0.5


def test_pos_probe_shapes_and_static_vectors_learn_tags():
    result = pos_probe(Static(16), seeds=(0,), n_train=60, n_test=60)
    assert result.scores.shape == (1, 1)
    assert result.mean[0] > 0.5, "a word's identity predicts its tag most of the time"


class TagOnly:
    """A vector that says a word's part of speech and nothing about which word it is."""

    def embed_sentence(self, tokens):
        tags = {tuple(s.tokens): s.tags for s in self.sentences}[tuple(tokens)]
        return torch.nn.functional.one_hot(torch.tensor([POS_TAGS.index(t) for t in tags]), len(POS_TAGS))[None].float()


def test_control_task_gives_each_word_one_tag_drawn_from_the_tag_distribution():
    sentences = ToyWorld(0).sentences(300, "train")
    tags = control_tags(sentences, seed=1)
    assert set(tags) == {w for s in sentences for w in s.tokens} and tags == control_tags(sentences, seed=1)
    assert tags != control_tags(sentences, seed=2), "another seed, another random assignment"
    real = torch.bincount(torch.tensor([POS_TAGS.index(t) for s in sentences for t in s.tags]), minlength=len(POS_TAGS))
    drawn = torch.bincount(torch.tensor(list(tags.values())), minlength=len(POS_TAGS))
    assert set(drawn.nonzero().flatten().tolist()) <= set(real.nonzero().flatten().tolist())


@pytest.mark.slow
def test_selectivity_tells_word_identity_from_part_of_speech():
    """Word-identity vectors learn the control task as well as POS (selectivity near 0, as Hewitt and Liang
    warn); vectors that only say the part of speech score full marks on POS and far less on the control task."""
    static = [pos_probe(Static(32), seeds=(0,), n_train=100, n_test=100, control=c).mean[0] for c in (False, True)]
    assert static[1] > 0.6 and abs(static[0] - static[1]) < 0.1, static
    tag_only = TagOnly()
    world = ToyWorld(0)
    tag_only.sentences = [*world.sentences(100, "train"), *world.sentences(100, "heldout")]
    pos, control = (pos_probe(tag_only, seeds=(0,), n_train=100, n_test=100, control=c).mean[0] for c in (False, True))
    assert pos == 1.0 and control < 0.6, (pos, control)


def test_mean_pool_pieces_averages_and_skips_specials():
    states = torch.arange(12.0).reshape(1, 4, 3)
    out = mean_pool_pieces(states, [None, 0, 0, 1], 2)
    torch.testing.assert_close(out, torch.tensor([[[4.5, 5.5, 6.5], [9.0, 10.0, 11.0]]]))
    with pytest.raises(ValueError, match="no pieces"):
        mean_pool_pieces(states, [None, 0, 0, 0], 2)


@pytest.mark.parametrize("name", ["elmo", "gpt", "bert"])
def test_a_batch_of_sentences_gives_each_the_vectors_it_gets_alone(name):
    """embed_sentences pads sentences of different lengths (and a word split into pieces) into batches; each
    sentence's vectors are those of embed_sentence, in the order given, and a model without embed_batch is
    embedded one sentence at a time."""
    import importlib

    model = importlib.import_module(f"word2bert.{name}").pretrained("cpu")
    sentences = [
        ["the", "mouse", "likes", "cheese"],
        ["buy"],
        ["buy", "a", "new", "mouse", "for", "your", "computer", "and", "a", "keyboard", "too"],
        ["i", "want", "to", "eat", "an", "apple"],
        ["xylophonist", "zebra"],
    ]
    batched = embed_sentences(model, sentences, batch_size=3)
    for tokens, vectors in zip(sentences, batched, strict=True):
        torch.testing.assert_close(vectors, model.embed_sentence(tokens), atol=1e-5, rtol=1e-5)
    static = Static()
    assert all(torch.equal(a, static.embed_sentence(s)) for a, s in zip(embed_sentences(static, sentences), sentences))
