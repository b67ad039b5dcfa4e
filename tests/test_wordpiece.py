"""WordPiece: the same ids as Hugging Face's BERT tokenizers given the same vocabulary."""

import inspect
import textwrap

import pytest
from tokenizers import BertWordPieceTokenizer

from word2bert.wordpiece import SPECIAL_TOKENS, UNK, WordPieceTokenizer, basic_tokenize

TRAIN = inspect.getsource(textwrap) + " Café naïve RÉSUMÉ, the players played; playing! 東京 " * 10
HELD_OUT = [
    "The players' résumés weren't ready: 3.5% of them (at most) were — \"unplayable\"!",
    "Naïve café-goers in Zürich paid $4,000 for 東京 tea\ton\nMonday\u00a0morning.",
    "x" * 120 + " supercalifragilistic qwzxv ÅÉÎÕÜ ßœ ﬁnal\x00\u200b stop",
    inspect.getsource(inspect.getsource)[:600],
]


@pytest.fixture(scope="module")
def ours():
    return WordPieceTokenizer.train([TRAIN], vocab_size=400, progress=False)


@pytest.fixture(scope="module")
def hf(ours, tmp_path_factory):
    from transformers import BertTokenizerFast

    # transformers 5 takes the vocabulary as a dict or a path through `vocab` (4.x: vocab_file=).
    return BertTokenizerFast(vocab=str(ours.save(tmp_path_factory.mktemp("wp") / "vocab.txt")))


def test_basic_tokenize_lowercases_strips_accents_and_splits_punctuation():
    assert basic_tokenize("Héllo, WORLD!! don't\tstop 東京") == [
        "hello",
        ",",
        "world",
        "!",
        "!",
        "don",
        "'",
        "t",
        "stop",
        "東",
        "京",
    ]
    assert basic_tokenize("Héllo", lowercase=False) == ["Héllo"]


def test_greedy_longest_match_first_and_unknown_words():
    tok = WordPieceTokenizer(
        SPECIAL_TOKENS + ["play", "##ing", "##in", "##g", "p", "##l", "un"],
        max_input_chars_per_word=8,
    )
    assert tok.wordpiece("playing") == ["play", "##ing"]
    assert tok.wordpiece("plg") == ["p", "##l", "##g"]
    assert tok.wordpiece("unplay") == [UNK]  # "un" then no "##play": the whole word is unknown
    assert tok.wordpiece("playingplaying") == [UNK]  # longer than max_input_chars_per_word


def test_same_ids_as_bert_tokenizer_fast_single_sentences(ours, hf):
    for text in HELD_OUT:
        enc = ours.encode(text)
        ref = hf(text, return_special_tokens_mask=True)
        assert enc.input_ids == ref["input_ids"], text
        assert enc.token_type_ids == ref["token_type_ids"]
        assert enc.special_tokens_mask == ref["special_tokens_mask"]
        assert enc.word_ids == ref.word_ids()
    assert ours.unk_id in ours.encode(HELD_OUT[2]).input_ids


def test_same_ids_as_hf_for_sentence_pairs_and_truncation(ours, hf):
    a, b = HELD_OUT[0], HELD_OUT[1]
    ref = hf(a, b, return_special_tokens_mask=True)
    enc = ours.encode(a, b)
    assert (enc.input_ids, enc.token_type_ids, enc.special_tokens_mask) == (
        ref["input_ids"],
        ref["token_type_ids"],
        ref["special_tokens_mask"],
    )
    assert set(enc.token_type_ids) == {0, 1}
    for n in (11, 20, 31):
        ref = hf(a, b, truncation="longest_first", max_length=n)
        assert ours.encode(a, b, max_length=n).input_ids == ref["input_ids"]


def test_same_ids_as_tokenizers_bert_word_piece(ours, tmp_path):
    hf = BertWordPieceTokenizer(str(ours.save(tmp_path / "vocab.txt")))
    for text in HELD_OUT:
        assert ours.encode(text).input_ids == hf.encode(text).ids


def test_training_vocabulary(ours):
    assert ours.vocab_size == 400
    assert ours.vocab[:5] == SPECIAL_TOKENS
    assert len(set(ours.vocab)) == 400
    assert {"return", "##e", "t"} <= set(ours.vocab)
    assert ours.tokenize("the players played") == ["the", "players", "played"]
    assert ours.unk_id not in ours.encode(TRAIN).input_ids  # every character of the corpus is in the vocabulary


def test_encode_words_and_batch(ours):
    enc = ours.encode_words(["The", "unplayable", "café"])
    assert enc.word_ids[0] is None and enc.word_ids[-1] is None
    assert sorted(set(enc.word_ids[1:-1])) == [0, 1, 2]
    assert enc.word_ids[1:-1].count(1) > 1  # "unplayable" is several pieces
    batch = ours.batch([enc, ours.encode("a")])
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, len(enc.input_ids))
    assert batch["attention_mask"][1].tolist() == [1, 1, 1] + [0] * (len(enc.input_ids) - 3)
    assert ours.decode(enc.input_ids) == "the unplayable cafe"


def test_save_load_round_trip(ours, tmp_path):
    loaded = WordPieceTokenizer.load(ours.save(tmp_path / "vocab.txt"))
    assert loaded.vocab == ours.vocab
