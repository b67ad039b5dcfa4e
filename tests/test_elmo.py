"""ELMo: shapes, padding, the residual, what the directions share, causality both ways, learning, checkpoints,
and the measured gain over static word vectors on the toy world's word senses."""

from __future__ import annotations

import json
import re
import shlex

import pytest
import torch
from helpers import card_corpus

from word2bert import elmo
from word2bert.checkpoint import read_metadata
from word2bert.data import ToyWorld, Vocab
from word2bert.elmo import BiLM, ElmoConfig, ScalarMix, make_batch, reverse_padded, word_char_ids
from word2bert.probes import sense_probe
from word2bert.recipes import options
from word2bert.recipes.elmo import ElmoRecipe, held_out_sentences
from word2bert.scripts import train_elmo
from word2bert.training import TrainConfig
from word2bert.word2vec import Word2Vec


@pytest.fixture(scope="module")
def sentences() -> list[list[str]]:
    return [list(s.tokens) for s in ToyWorld(0).sentences(400)]


@pytest.fixture(scope="module")
def vocab(sentences) -> Vocab:
    return Vocab.build(sentences, min_count=2)


def tiny(vocab: Vocab, seed: int = 0, dropout: float = 0.0) -> BiLM:
    torch.manual_seed(seed)
    config = ElmoConfig(
        vocab_size=len(vocab),
        max_characters=10,
        filters=[(1, 4), (2, 4), (3, 8)],
        n_highway=1,
        dim=8,
        cell_dim=12,
        dropout=dropout,
    )
    return BiLM(config, vocab).eval()


def test_character_ids_follow_allennlp():
    # bytes + 1 between begin-of-word (258 + 1) and end-of-word (259 + 1), then padding 0
    assert word_char_ids("cat", 7) == [259, 100, 98, 117, 260, 0, 0]
    assert word_char_ids("<s>", 4) == [259, 257, 260, 0]
    assert word_char_ids("elephant", 6) == [259, 102, 109, 102, 113, 260]  # cut to fit the markers


def test_shapes(vocab):
    model = tiny(vocab)
    batch = make_batch([["the", "mouse", "ran"], ["a", "bank"]], vocab, 10)
    assert batch["chars"].shape == (2, 5, 10) and batch["mask"].tolist()[1] == [True] * 4 + [False]
    layers = model(batch["chars"], batch["mask"])
    assert layers.shape == (3, 2, 5, 16)
    # layer 0 is the token vector twice; padding positions are zero
    torch.testing.assert_close(layers[0, ..., :8], layers[0, ..., 8:])
    assert layers[:, 1, 4].abs().max() == 0
    assert model.embed_sentence(["the", "mouse", "ran"]).shape == (3, 3, 16)
    assert model.loss(**batch).shape == ()


def test_reverse_padded_is_an_involution_within_lengths():
    x = torch.arange(8.0).view(2, 4, 1)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    assert reverse_padded(x, mask)[..., 0].tolist() == [[2, 1, 0, 3], [7, 6, 5, 4]]
    torch.testing.assert_close(reverse_padded(reverse_padded(x, mask), mask), x)


def test_padding_does_not_change_real_tokens(vocab):
    model = tiny(vocab)
    short = ["the", "bat", "flew"]
    alone = model.embed_sentence(short)
    batched = model.embed_batch([short, ["alice", "saw", "a", "big", "bat", "in", "the", "cave", "."]])[0]
    torch.testing.assert_close(alone, batched, atol=1e-5, rtol=1e-5)


def test_residual_between_lstm_layers(vocab):
    model = tiny(vocab)
    batch = make_batch([["the", "bank", "of", "the", "river"]], vocab, 10)
    tokens, forward, _ = model.states(batch["chars"], batch["mask"])
    lstm1, lstm2 = model.forward_lm.layers
    torch.testing.assert_close(forward[0], lstm1(tokens)[0])
    torch.testing.assert_close(forward[1], forward[0] + lstm2(forward[0])[0])


def test_directions_share_characters_and_softmax_but_not_lstms(vocab):
    model = tiny(vocab)
    names = [n for n, _ in model.named_parameters()]
    assert any(n.startswith("char_encoder.") for n in names) and "softmax.weight" in names
    fwd = dict(model.forward_lm.named_parameters())
    bwd = dict(model.backward_lm.named_parameters())
    assert fwd.keys() == bwd.keys()
    assert all(fwd[k].data_ptr() != bwd[k].data_ptr() and not torch.equal(fwd[k], bwd[k]) for k in fwd)
    # each direction's loss trains the shared encoder and softmax, and only its own LSTMs
    batch = make_batch([["the", "mouse", "ate", "cheese"]], vocab, 10)
    for direction, own, other in ((0, model.forward_lm, model.backward_lm), (1, model.backward_lm, model.forward_lm)):
        model.zero_grad()
        model.cross_entropies(**batch)[direction].backward()
        assert model.softmax.weight.grad.abs().sum() > 0
        assert model.char_encoder.projection.weight.grad.abs().sum() > 0
        assert all(p.grad.abs().sum() > 0 for p in own.parameters())
        assert all(p.grad is None for p in other.parameters())


def test_causality_in_both_directions(vocab):
    model = tiny(vocab)
    a = ["the", "bat", "flew", "out", "of", "the", "cave"]
    t = 3
    after = a[: t + 1] + ["into", "a", "barn"]  # tokens after t changed
    before = ["a", "big", "owl"] + a[t:]  # tokens before t changed
    states = {}
    for name, s in (("a", a), ("after", after), ("before", before)):
        batch = make_batch([s], vocab, 10)
        _, fwd, bwd = model.states(batch["chars"], batch["mask"])
        states[name] = fwd, bwd
    p = t + 1  # position of word t after <s>
    for layer in range(2):
        fa, ba = states["a"][0][layer], states["a"][1][layer]
        # the forward LM up to t has not seen what follows; the backward LM from t on has not seen what precedes
        torch.testing.assert_close(states["after"][0][layer][:, : p + 1], fa[:, : p + 1])
        torch.testing.assert_close(states["before"][1][layer][:, p:], ba[:, p:])
        # ... and both do see the changes on their own side
        assert not torch.allclose(states["after"][0][layer][:, p + 1], fa[:, p + 1])
        assert not torch.allclose(states["before"][1][layer][:, p - 1], ba[:, p - 1])
    # neither direction sees the word it predicts: the forward state at p predicts p + 1 (changed in "after"),
    # the backward state at p predicts p - 1 (changed in "before"), and both states stayed the same above


@pytest.mark.slow
def test_training_lowers_the_loss(sentences, vocab):
    model = tiny(vocab, dropout=0.1)
    held_out = [list(s.tokens) for s in ToyWorld(1).sentences(100)]
    before = elmo.perplexity(model, held_out)["mean"]
    history = elmo.train(model, sentences, TrainConfig(steps=60, lr=1e-2, warmup_steps=5), batch_size=32, device="cpu")
    after = elmo.perplexity(model, held_out)["mean"]
    assert len(history) == 60
    assert sum(history[-10:]) / 10 < sum(history[:10]) / 10 - 0.5
    assert after < 0.5 * before


def test_scalar_mix_trains_on_a_frozen_bilm(vocab):
    model = tiny(vocab).requires_grad_(False)
    mix = ScalarMix(3)
    batch = make_batch([["the", "star", "was", "bright"]], vocab, 10)
    layers = model(batch["chars"], batch["mask"])
    torch.testing.assert_close(mix(layers), layers.mean(0))  # weights 0, gamma 1: the mean of the layers
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([0.0, 50.0, 0.0]))
        mix.gamma.fill_(2.0)
    torch.testing.assert_close(mix(layers), 2 * layers[1])
    mix(layers).sum().backward()
    assert mix.gamma.grad is not None and all(p.grad is None for p in model.parameters())


def test_checkpoint_round_trip(tmp_path, vocab):
    model = tiny(vocab, seed=3)
    path = elmo.save(model, tmp_path / "elmo.safetensors", {"note": "tiny"})
    loaded = elmo.load(path, device="cpu")
    assert loaded.config == model.config and loaded.vocab.itos == vocab.itos
    tokens = ["the", "crane", "lifted", "steel"]
    torch.testing.assert_close(loaded.embed_sentence(tokens), model.embed_sentence(tokens))


@pytest.fixture(scope="module")
def pretrained() -> BiLM:
    return elmo.pretrained(device="cpu")


def test_committed_checkpoint_loads(pretrained):
    vectors = pretrained.embed_sentence(["the", "mouse", "clicked", "on", "the", "icon"])
    assert vectors.shape == (3, 6, 2 * pretrained.config.dim)
    assert torch.isfinite(vectors).all()


@pytest.mark.slow
@pytest.mark.committed
def test_committed_checkpoint_gives_the_perplexity_of_its_card(pretrained):
    """Loading with the current code (on the CPU, from the fp16 file) gives the perplexity measured when the
    checkpoint was trained (on a GPU, in fp32)."""
    card = elmo.CHECKPOINT.with_suffix(".md").read_text(encoding="utf-8")
    assert str(pretrained.config) in card, "the model card describes another configuration"
    reported = float(re.search(r"held-out toy-world templates: .*?mean ([\d.]+)", card).group(1))
    held_out = held_out_sentences(*card_corpus(card))
    assert elmo.perplexity(pretrained, held_out)["mean"] == pytest.approx(reported, rel=1e-3)


# The committed biLM on held-out templates (sense_probe, seeds 0-2, see elmo.md): LSTM 1 0.701 ± 0.013, LSTM 2
# 0.615 ± 0.009, against exactly 0.5 for any static vector. The test asks for 0.10, well inside the measured 0.20
# (0.17 for the first, smaller checkpoint).
MARGIN = 0.10


@pytest.mark.slow
def test_pretrained_elmo_beats_word2vec_on_word_senses(pretrained):
    corpus = [s for d in ToyWorld(0).corpus(20_000) for s in d]
    w2v = Word2Vec(corpus, vector_size=32, window=5, min_count=1, epochs=1, seed=0, device="cpu", progress=False)
    static = sense_probe(w2v).mean[0]
    contextual = sense_probe(pretrained).mean
    assert static == 0.5  # one vector per word: every sense ties, the tie goes to the first sense
    assert contextual[0] == 0.5  # ELMo's own token layer is static too
    assert max(contextual[1:]) >= static + MARGIN, f"ELMo layers {contextual} vs word2vec {static}"


def test_the_committed_recipe_was_run_on_a_cpu_too():
    """elmo_cpu_run.json is the card's command run again on a CPU (the committed weights came from a GPU): the same
    data, configuration and steps, and the readings the card and chapter 2's layers page give from it: WordNet the
    same to 0.01 per layer, the toy world's best LSTM layer still 0.10 above static vectors, but the order of the
    two LSTM layers there turned round."""
    run = json.loads((elmo.CHECKPOINT.parent / "elmo_cpu_run.json").read_text(encoding="utf-8"))
    config, extra = read_metadata(elmo.CHECKPOINT)
    committed = extra["metrics"]
    card = elmo.CHECKPOINT.with_suffix(".md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(.*?)\n```", card, re.S).group(1)
    assert run["command"] == command + " --device cpu --threads 2"
    assert run["config"] == config and run["metrics"]["device"] == "cpu" and committed["device"] == "cuda"
    for key in ("train_words", "sentences", "steps", "parameters", "vocab_size"):
        assert run["metrics"][key] == committed[key], key
    probes, ours = run["metrics"]["probes"], committed["probes"]
    wordnet = "sense (WordNet, held out)"
    assert probes[wordnet]["mean"] == pytest.approx(ours[wordnet]["mean"], abs=0.01)
    toy, theirs = ours["sense (toy world)"]["mean"], probes["sense (toy world)"]["mean"]
    assert toy[0] == theirs[0] == 0.5 and max(theirs[1:]) >= 0.5 + MARGIN
    assert toy[1] > toy[2] and theirs[2] > theirs[1], "the layers page says the two runs order the layers apart"
    assert f"{run['metrics']['minutes']:.0f} minutes" in card


@pytest.mark.slow
def test_train_script_main_tiny(tmp_path):
    out = tmp_path / "elmo.safetensors"
    argv = [
        "--num-tokens",
        "4000",
        "--epochs",
        "2",
        "--batch-size",
        "32",
        "--dim",
        "16",
        "--cell-dim",
        "24",
        "--filters",
        "1:8,2:8",
        "--max-characters",
        "8",
        "--lr",
        "1e-2",
        "--warmup-steps",
        "5",
        "--out",
        str(out),
        "--probe-seeds",
        "--device",
        "cpu",
    ]
    metrics = train_elmo.main(argv)
    assert metrics["perplexity"]["mean"] < metrics["initial_perplexity"]["mean"]
    model = elmo.load(out, device="cpu")
    assert model.config.dim == 16 and len(model.vocab) == metrics["vocab_size"]
    card = out.with_suffix(".md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(.*?)\n```", card, re.S).group(1)
    assert command.startswith("python -m word2bert.scripts.train_elmo --num-tokens 4000 --device cpu --out ")
    assert options.parse(ElmoRecipe, shlex.split(command)[3:]) == options.parse(ElmoRecipe, argv), "the run's recipe"
    assert f"mean {metrics['perplexity']['mean']:.1f}" in card
