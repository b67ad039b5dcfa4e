"""Byte-level BPE: exact round-trip of any text, and the same vocabulary and encodings as HF `tokenizers`."""

import inspect
import json
import string
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import ByteLevelBPETokenizer, Tokenizer, decoders, models, pre_tokenizers

from word2bert.bpe import ENDOFTEXT, BPETokenizer, bytes_to_unicode, pretokenize

UNICODE = "Café naïve résumé, 日本語のテキスト 😀😀 ünïcödé Ελληνικά 12345 "
TRAIN = inspect.getsource(json.decoder) + inspect.getsource(textwrap) + UNICODE * 5
HELD_OUT = inspect.getsource(string) + " Ça va? 東京 😀 x²  \t\n  end  ʼn ﬁ"


@pytest.fixture(scope="module")
def ours():
    return BPETokenizer.train([TRAIN], vocab_size=700, progress=False)


def hf_trained(vocab_size):
    hf = ByteLevelBPETokenizer()
    hf.train_from_iterator(
        [TRAIN],
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[ENDOFTEXT],
        show_progress=False,
    )
    return hf


def test_bytes_to_unicode_is_a_printable_bijection():
    m = bytes_to_unicode()
    assert len(m) == 256 and len(set(m.values())) == 256
    assert m[ord("A")] == "A" and m[ord(" ")] == "Ġ" and m[ord("\n")] == "Ċ"
    assert all(c.isprintable() and not c.isspace() for c in m.values())


def test_pretokenize_keeps_the_leading_space_with_the_word():
    assert pretokenize("Hello world, it's 2024!") == [
        "Hello",
        "Ġworld",
        ",",
        "Ġit",
        "'s",
        "Ġ2024",
        "!",
    ]


def test_same_vocabulary_and_encodings_as_hf_tokenizers(ours):
    hf = hf_trained(700)
    assert ours.vocab_size == hf.get_vocab_size() == 700
    assert ours.token_to_id == hf.get_vocab()
    assert ours.encode(HELD_OUT) == hf.encode(HELD_OUT).ids
    assert ours.decode(ours.encode(HELD_OUT)) == HELD_OUT


def test_training_stops_when_no_pair_is_frequent_enough_as_hf_does():
    ours = BPETokenizer.train([TRAIN], vocab_size=100_000, progress=False)
    hf = hf_trained(100_000)
    assert ours.vocab_size == hf.get_vocab_size() < 100_000
    assert ours.encode(HELD_OUT) == hf.encode(HELD_OUT).ids


def test_hf_bpe_model_built_from_our_merges_encodes_like_ours(ours):
    hf = Tokenizer(models.BPE(ours.token_to_id, ours.merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    text = HELD_OUT + UNICODE[::-1]
    assert ours.encode(text) == hf.encode(text).ids


def test_special_tokens_are_single_ids_and_decode_back(ours):
    ids = ours.encode(f"one<|endoftext|>two {ENDOFTEXT}")
    eot = ours.token_to_id[ENDOFTEXT]
    assert eot == 0 and ids.count(eot) == 2
    assert ours.decode(ids) == f"one{ENDOFTEXT}two {ENDOFTEXT}"


def test_merges_shorten_frequent_words_with_their_leading_space(ours):
    assert ours.tokenize(" return") == ["Ġreturn"]
    assert len(ours.tokenize("return")) > 1  # at the start of a line the word is rarer: no single token


def test_encode_words_gives_word_ids_and_matches_encoding_the_sentence(ours):
    words = ["Le", "café", "est", "décidé", "."]
    ids, word_ids = ours.encode_words(words)
    assert ids == ours.encode("Le café est décidé .")
    assert word_ids[0] == 0 and word_ids[-1] == 4 and sorted(word_ids) == word_ids
    assert set(word_ids) == set(range(5))


def test_save_load_round_trip(ours, tmp_path):
    loaded = BPETokenizer.load(ours.save(tmp_path / "bpe.json"))
    assert loaded.token_to_id == ours.token_to_id
    assert loaded.encode(HELD_OUT) == ours.encode(HELD_OUT)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_round_trip_of_any_unicode_text(ours, text):
    assert ours.decode(ours.encode(text)) == text


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(alphabet="abcé😀 ", max_size=12), min_size=1, max_size=6))
def test_training_on_any_text_round_trips_and_matches_hf(texts):
    ours = BPETokenizer.train(texts, vocab_size=300, min_frequency=1, special_tokens=[], progress=False)
    hf = ByteLevelBPETokenizer()
    hf.train_from_iterator(texts, vocab_size=300, min_frequency=1, show_progress=False)
    assert ours.token_to_id == hf.get_vocab()
    joined = " ".join(texts)
    assert ours.encode(joined) == hf.encode(joined).ids
    assert ours.decode(ours.encode(joined)) == joined
