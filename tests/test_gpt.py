"""Our GPT against Hugging Face's GPT-2 (same weights, same logits and generations), the KV cache, causality."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from helpers import perturbed
from safetensors import safe_open
from safetensors.torch import save_file

from word2bert import gpt, metrics
from word2bert.bpe import BPETokenizer
from word2bert.gpt import GPT, GPTConfig, from_hf, sample_next
from word2bert.training import TrainConfig, train
from word2bert.transformer import use_plain_attention

TOL = {"atol": 1e-5, "rtol": 1e-5}


@pytest.fixture(scope="module")
def hf():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=257,
        n_positions=64,
        n_embd=64,
        n_layer=2,
        n_head=4,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="eager",
    )
    return perturbed(GPT2LMHeadModel(config))


@pytest.fixture(scope="module")
def ours(hf):
    return from_hf(hf).eval()


def batch_with_padding():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 257, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, :4] = 0  # left padding
    mask[2, 9:] = 0  # right padding
    return ids, mask


def test_logits_equal_hf_without_mask(hf, ours):
    ids, _ = batch_with_padding()
    with torch.no_grad():
        expected = hf(ids).logits
        torch.testing.assert_close(ours(ids), expected, **TOL)
        torch.testing.assert_close(use_plain_attention(ours)(ids), expected, **TOL)
    use_plain_attention(ours, plain=False)


def test_logits_equal_hf_with_left_and_right_padding(hf, ours):
    ids, mask = batch_with_padding()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # what HF's generate() passes for padded prompts
    with torch.no_grad():
        expected = hf(ids, attention_mask=mask, position_ids=positions).logits
        got = ours(ids, mask)
    real = mask.bool()  # logits at padding positions are meaningless and not compared
    torch.testing.assert_close(got[real], expected[real], **TOL)


def test_padding_does_not_change_the_real_tokens(ours):
    ids, mask = batch_with_padding()
    with torch.no_grad():
        padded = ours(ids, mask)
        torch.testing.assert_close(padded[1, 4:], ours(ids[1:2, 4:])[0], **TOL)
        torch.testing.assert_close(padded[2, :9], ours(ids[2:3, :9])[0], **TOL)


def test_loss_of_a_padded_batch_is_the_loss_of_its_sentences(ours):
    """Each token predicted from a real token counts once; nothing that a padding position outputs reaches the
    loss (the first token after left padding has no context, and a query with no key to attend to gives
    whatever the attention kernel gives, which differs between the CPU and CUDA)."""
    ids, mask = batch_with_padding()
    sentences = [ids[0], ids[1, 4:], ids[2, :9]]
    with torch.no_grad():
        got = ours.loss(ids, mask)
        per_token = [F.cross_entropy(ours(s[None])[0, :-1], s[1:], reduction="sum") for s in sentences]
        want = sum(per_token) / sum(len(s) - 1 for s in sentences)
        torch.testing.assert_close(got, want, **TOL)
        # the padding's own tokens and what comes out at its positions play no part
        scrambled = ids.masked_fill(mask == 0, 7)
        torch.testing.assert_close(ours.loss(scrambled, mask), got, **TOL)


def test_hidden_states_equal_hf(hf, ours):
    ids, _ = batch_with_padding()
    with torch.no_grad():
        expected = hf(ids, output_hidden_states=True).hidden_states
        got = ours.hidden_states(ids)
    assert len(got) == len(expected) == 3
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, **TOL)


def test_greedy_generation_of_20_tokens_equals_hf(hf, ours):
    ids, mask = batch_with_padding()
    prompt = ids[:1, :5]
    expected = hf.generate(prompt, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(prompt, 20, greedy=True), expected)
    # A left-padded batch of prompts, as HF generates them.
    prompts, pmask = ids[:2, :8], mask[:2, :8]
    expected = hf.generate(prompts, attention_mask=pmask, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(prompts, 20, attention_mask=pmask, greedy=True), expected)


def test_beam_search_equals_hf(hf, ours):
    for seed, beams in ((0, 2), (1, 4), (3, 8)):  # prompts where beam search and greedy decoding disagree
        prompt = torch.randint(0, 257, (1, 4), generator=torch.Generator().manual_seed(seed))
        expected = hf.generate(prompt, max_new_tokens=12, num_beams=beams, do_sample=False, pad_token_id=0)
        found = gpt.beam_search(ours, prompt, 12, num_beams=beams)
        assert torch.equal(found, expected)
        greedy = ours.generate(prompt, 12, greedy=True)
        assert not torch.equal(found, greedy)
        assert gpt.continuation_nll(ours, found, 4) < gpt.continuation_nll(ours, greedy, 4)


def test_beam_search_with_one_beam_is_greedy_and_with_every_path_is_exact(ours):
    prompt = torch.tensor([[5, 6, 7]])
    assert torch.equal(gpt.beam_search(ours, prompt, 10, num_beams=1), ours.generate(prompt, 10, greedy=True))
    # Three new tokens from a vocabulary cut to 6 (the rest masked out): 36 beams keep every path of two steps,
    # so the third step sees every path of three and must find the most likely one, as brute force does.
    cut = copy.deepcopy(ours)
    bias = torch.full((ours.config.vocab_size,), float("-inf"))
    bias[:6] = 0
    cut.lm_head.register_forward_hook(lambda module, inputs, logits: logits + bias)
    found = gpt.beam_search(cut, prompt, 3, num_beams=36)
    paths = torch.cartesian_prod(*[torch.arange(6)] * 3)
    nll = gpt.continuation_nll(cut, torch.cat([prompt.expand(len(paths), -1), paths], dim=1), prompt.size(1))
    assert torch.equal(found[0, 3:], paths[nll.argmin()])


def test_continuation_nll_is_the_language_model_loss_of_the_continuation(ours):
    ids, _ = batch_with_padding()
    torch.testing.assert_close(gpt.continuation_nll(ours, ids[:1], 1)[0], ours.loss(ids[:1]), **TOL)
    with torch.no_grad():
        logprobs = ours(ids[:2, :6]).log_softmax(-1)
    by_hand = -(logprobs[:, 3, :].gather(-1, ids[:2, 4:5]) + logprobs[:, 4, :].gather(-1, ids[:2, 5:6])) / 2
    torch.testing.assert_close(gpt.continuation_nll(ours, ids[:2, :6], 4), by_hand.squeeze(-1), **TOL)


def test_kv_cache_gives_the_logits_of_the_full_sequence(ours):
    ids, mask = batch_with_padding()
    with torch.no_grad():
        full = ours(ids, mask)
        cache = ours.new_cache()
        steps = [ours(ids[:, :6], mask[:, :6], cache)]
        steps += [ours(ids[:, t : t + 1], mask[:, : t + 1], cache) for t in range(6, 12)]
    real = mask.bool()
    torch.testing.assert_close(torch.cat(steps, dim=1)[real], full[real], **TOL)


def test_generation_with_and_without_cache_is_identical(ours):
    prompt = torch.tensor([[1, 2, 3, 4]])
    assert torch.equal(
        ours.generate(prompt, 15, greedy=True),
        ours.generate(prompt, 15, greedy=True, use_cache=False),
    )
    sampled = [
        ours.generate(prompt, 15, top_k=20, top_p=0.9, generator=torch.Generator().manual_seed(3), use_cache=c)
        for c in (True, False)
    ]
    assert torch.equal(*sampled)


@pytest.mark.parametrize("post_ln", [False, True])
def test_changing_later_tokens_never_changes_earlier_logits(post_ln):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=16, n_layer=2, n_head=2, n_embd=32, post_ln=post_ln)).eval()
    ids = torch.randint(0, 50, (1, 16))
    with torch.no_grad():
        base = model(ids)
        for t in (0, 5, 14):
            changed = ids.clone()
            changed[0, t + 1 :] = torch.randint(0, 50, (15 - t,))
            out = model(changed)
            torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], atol=1e-6, rtol=0)
            assert not torch.allclose(out[:, t + 1 :], base[:, t + 1 :])


def test_gpt2_init_scales_the_residual_projections():
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=8, n_embd=256, n_head=4))
    assert model.lm_head.weight is model.wte.weight
    layers = model.layers
    assert layers[0].attn.w_qkv.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert layers[0].attn.w_o.weight.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.02)
    assert layers[3].ffn.w_2.weight.std().item() == pytest.approx(0.02 / math.sqrt(16), rel=0.02)


def test_sampling_rules():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.0]])
    assert sample_next(logits, greedy=True).item() == 1
    assert sample_next(logits, top_k=1).item() == 1
    assert sample_next(logits, top_p=0.01).item() == 1
    g = torch.Generator().manual_seed(0)
    draws = torch.cat([sample_next(logits, top_k=2, generator=g) for _ in range(200)])
    assert set(draws.tolist()) == {1, 3}
    # top_p = 0.8 keeps the two most likely tokens (p = 0.64, 0.24): together 0.88 >= 0.8.
    draws = torch.cat([sample_next(logits, top_p=0.8, generator=g) for _ in range(200)])
    assert set(draws.tolist()) == {1, 3}
    cold = torch.cat([sample_next(logits, temperature=0.05, generator=g) for _ in range(50)])
    assert set(cold.tolist()) == {1}


def test_the_sampling_functions_of_exercise_3():
    """gpt.top_p_filter and gpt.sample_next_token keep the contracts exercise 3 gives its students."""
    logits = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]).log()
    cut = gpt.top_p_filter(logits, 0.65)
    assert (cut > float("-inf")).tolist() == [[True, True, False, False], [False, False, True, True]]
    assert torch.equal(cut[cut > float("-inf")], logits[cut > float("-inf")]), "kept logits unchanged"
    assert torch.equal(gpt.top_p_filter(logits, 1.0), logits), "p >= 1 cuts nothing"
    assert gpt.sample_next_token(logits, temperature=0).tolist() == [0, 3], "temperature 0 is greedy"
    draws = gpt.sample_next_token(cut.repeat(100, 1), 1.0, None, torch.Generator().manual_seed(0))
    assert set(draws.view(100, 2)[:, 0].tolist()) == {0, 1} and set(draws.view(100, 2)[:, 1].tolist()) == {2, 3}
    assert gpt.sample_next_token(logits, 1.0, top_k=1).tolist() == [0, 3]


TEXT = "the cat sat on the mat . the dog sat on the log . " * 40


@pytest.fixture(scope="module")
def trained():
    tok = BPETokenizer.train([TEXT], vocab_size=300, progress=False)
    ids = torch.tensor(tok.encode(TEXT))
    batches = [ids[i : i + 33].unsqueeze(0).repeat(4, 1) for i in range(0, 300, 33)]
    torch.manual_seed(0)
    model = GPT(
        GPTConfig(vocab_size=tok.vocab_size, block_size=33, n_layer=2, n_head=2, n_embd=32, dropout=0.0),
        tok,
    )
    history = train(
        model,
        batches,
        lambda m, b: m.loss(b),
        TrainConfig(steps=60, lr=3e-3, warmup_steps=5),
        device="cpu",
    )
    return model.eval(), history


def test_training_lowers_the_loss(trained):
    _, history = trained
    assert sum(history[-5:]) / 5 < 0.5 * sum(history[:5]) / 5


def test_checkpoint_round_trip(trained, tmp_path):
    model, _ = trained
    loaded = gpt.load(gpt.save(model, tmp_path / "gpt.safetensors"), device="cpu")
    ids = torch.tensor([model.tokenizer.encode("the cat sat on")])
    torch.testing.assert_close(loaded(ids), model(ids), atol=0, rtol=0)
    assert loaded.tokenizer.token_to_id == model.tokenizer.token_to_id
    assert loaded.config == model.config


def test_a_checkpoint_from_before_the_layer_rename_is_refused_by_name(trained, tmp_path):
    model, _ = trained
    path = gpt.save(model, tmp_path / "gpt.safetensors")
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata()
        old = {k.replace("layers.", "h.").replace(".ffn.", ".mlp."): f.get_tensor(k) for k in f.keys()}
    save_file(old, str(path), metadata=metadata)
    with pytest.raises(ValueError, match="predates the renaming"):
        gpt.load(path)


def test_embed_sentence_pools_pieces_and_sees_only_the_left_context(trained):
    model, _ = trained
    a = model.embed_sentence(["the", "cat", "sat", "on", "the", "mat"])
    b = model.embed_sentence(["the", "cat", "sat", "on", "the", "dog"])
    assert a.shape == (3, 6, 32)
    torch.testing.assert_close(a[:, :5], b[:, :5])
    assert not torch.allclose(a[:, 5], b[:, 5])
    # A word split into several pieces gets their mean.
    ids, word_ids = model.tokenizer.encode_words(["the", "catmat"])
    assert word_ids.count(1) > 1
    states = torch.cat(model.hidden_states(torch.tensor([ids])))
    torch.testing.assert_close(model.embed_sentence(["the", "catmat"])[:, 1], states[:, 1:].mean(dim=1))


def test_distinct_n_and_repetition_count_n_grams():
    assert metrics.distinct_n([["a", "b", "c"], ["a", "b", "d"]], 2) == 3 / 4  # ab bc ab bd: 3 different of 4
    assert metrics.distinct_n([["a"], []], 2) == 0.0
    assert metrics.repetition("a b a b a b".split(), 2) == pytest.approx(3 / 5)  # ab ba ab ba ab: 3 repeats
    assert metrics.repetition("the cat sat on the mat".split(), 1) == pytest.approx(1 / 6)
    assert metrics.repetition(list("abcdef"), 4) == 0.0 and metrics.repetition(["a"], 4) == 0.0
