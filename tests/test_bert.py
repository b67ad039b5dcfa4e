"""Our BERT against Hugging Face's (same weights, same outputs), parameter counts, pre-training, checkpoints."""

import re

import pytest
import torch
from helpers import perturbed

from word2bert import bert
from word2bert.bert import Bert, BertConfig, BertForPreTraining, count_parameters, from_hf
from word2bert.training import TrainConfig, train
from word2bert.transformer import use_plain_attention
from word2bert.wordpiece import WordPieceTokenizer

TOL = {"atol": 1e-5, "rtol": 1e-5}


def tiny_hf_config():
    from transformers import BertConfig as HFBertConfig

    return HFBertConfig(
        vocab_size=120,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
        attn_implementation="eager",
    )


@pytest.fixture(scope="module")
def hf():
    from transformers import BertForPreTraining as HFBertForPreTraining

    torch.manual_seed(0)
    return perturbed(HFBertForPreTraining(tiny_hf_config()))


@pytest.fixture(scope="module")
def ours(hf):
    return from_hf(hf).eval()


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 120, (3, 12), generator=g)
    token_type_ids = torch.zeros_like(ids)
    token_type_ids[:, 6:] = 1
    attention_mask = torch.ones_like(ids)
    attention_mask[1, 9:] = 0
    attention_mask[2, 5:] = 0
    token_type_ids[2, 3:] = 1
    return ids, token_type_ids, attention_mask


@pytest.mark.parametrize("plain", [False, True])
def test_outputs_equal_hf_with_padding_and_segments(hf, ours, plain):
    ids, tt, am = batch()
    use_plain_attention(ours, plain)
    with torch.no_grad():
        got = ours(ids, token_type_ids=tt, attention_mask=am, output_hidden_states=True)
        ref = hf(ids, token_type_ids=tt, attention_mask=am, output_hidden_states=True)
        ref_base = hf.bert(ids, token_type_ids=tt, attention_mask=am)
    use_plain_attention(ours, False)
    torch.testing.assert_close(got.last_hidden_state, ref_base.last_hidden_state, **TOL)
    torch.testing.assert_close(got.pooler_output, ref_base.pooler_output, **TOL)
    torch.testing.assert_close(got.prediction_logits, ref.prediction_logits, **TOL)
    torch.testing.assert_close(got.seq_relationship_logits, ref.seq_relationship_logits, **TOL)
    assert len(got.hidden_states) == len(ref.hidden_states) == 3
    for a, b in zip(got.hidden_states, ref.hidden_states):
        torch.testing.assert_close(a, b, **TOL)


def test_loss_equals_hf(hf, ours):
    ids, tt, am = batch()
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 7], labels[2, 1] = 5, 17, 99
    nsp = torch.tensor([0, 1, 1])
    with torch.no_grad():
        got = ours(ids, tt, am, labels=labels, next_sentence_label=nsp).loss
        ref = hf(ids, token_type_ids=tt, attention_mask=am, labels=labels, next_sentence_label=nsp).loss
    torch.testing.assert_close(got, ref, **TOL)


def test_from_hf_bert_model_and_padding_leaves_real_tokens_unchanged(hf):
    encoder = from_hf(hf.bert).eval()
    assert isinstance(encoder, Bert)
    ids, tt, am = batch()
    with torch.no_grad():
        padded = encoder(ids, tt, am).last_hidden_state
        alone = encoder(ids[2:, :5], tt[2:, :5]).last_hidden_state
    torch.testing.assert_close(padded[2, :5], alone[0], **TOL)


@pytest.mark.parametrize("size,paper", [("base", 110e6), ("large", 340e6)])
def test_parameter_counts_equal_hf_and_the_paper_roughly(size, paper):
    from transformers import BertConfig as HFBertConfig
    from transformers import BertForPreTraining as HFBertForPreTraining
    from transformers import BertModel as HFBertModel

    config = getattr(BertConfig, size)()
    hf_config = HFBertConfig(
        hidden_size=config.hidden_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
    )
    with torch.device("meta"):  # shapes only: no memory, no time
        counts = {
            "encoder": (count_parameters(Bert(config)), HFBertModel(hf_config).num_parameters()),
            "pre-training": (
                count_parameters(BertForPreTraining(config)),
                HFBertForPreTraining(hf_config).num_parameters(),
            ),
        }
    print(f"BERT-{size}: ours {counts['encoder'][0]:,} | HF {counts['encoder'][1]:,} | paper {paper / 1e6:.0f}M")
    for ours_count, hf_count in counts.values():
        assert ours_count == hf_count
    assert abs(counts["encoder"][0] - paper) / paper < 0.02


def test_mlm_decoder_is_tied_and_init_std_is_002():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(hidden_size=256, intermediate_size=1024))
    assert model.mlm.decoder.weight is model.bert.embeddings.word_embeddings.weight
    assert model.bert.layers[0].ffn.w_1.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert torch.equal(model.mlm.bias, torch.zeros(2048))


TEXT = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a bird sang in the tree",
    "the cat saw the bird",
] * 10


@pytest.fixture(scope="module")
def trained():
    tok = WordPieceTokenizer.train(TEXT, vocab_size=60, progress=False)
    encs = [tok.encode(a, b) for a, b in zip(TEXT, TEXT[1:] + TEXT[:1])]
    data = tok.batch(encs[:8])
    g = torch.Generator().manual_seed(0)
    special = torch.tensor(
        [e.special_tokens_mask + [1] * (data["input_ids"].size(1) - len(e.input_ids)) for e in encs[:8]]
    )
    masked = (torch.rand(data["input_ids"].shape, generator=g) < 0.3) & (special == 0)
    labels = data["input_ids"].masked_fill(~masked, -100)
    inputs = data["input_ids"].masked_fill(masked, tok.mask_id)
    nsp = torch.tensor([0, 1] * 4)
    batch = {**data, "input_ids": inputs, "labels": labels, "next_sentence_label": nsp}
    torch.manual_seed(0)
    model = BertForPreTraining(
        BertConfig(
            vocab_size=tok.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
            dropout=0.0,
        ),
        tok,
    )
    history = train(
        model,
        [batch],
        lambda m, b: m(**b).loss,
        TrainConfig(steps=30, lr=1e-2, warmup_steps=3, schedule="linear"),
        device="cpu",
    )
    return model.eval(), history


def test_pretraining_lowers_the_loss(trained):
    _, history = trained
    assert sum(history[-5:]) / 5 < 0.5 * sum(history[:5]) / 5


def test_checkpoint_round_trip(trained, tmp_path):
    model, _ = trained
    loaded = bert.load(bert.save(model, tmp_path / "bert.safetensors"), device="cpu")
    enc = model.tokenizer.batch([model.tokenizer.encode("the cat", "sat on the mat")])
    a, b = model(**enc), loaded(**enc)
    torch.testing.assert_close(a.prediction_logits, b.prediction_logits, atol=0, rtol=0)
    assert loaded.tokenizer.vocab == model.tokenizer.vocab and loaded.config == model.config


def test_a_half_precision_checkpoint_is_half_the_size_and_leaves_the_model_alone(trained, tmp_path):
    model, _ = trained
    before = {k: v.clone() for k, v in model.state_dict().items()}
    full = bert.save(model, tmp_path / "full.safetensors")
    half = bert.save(model, tmp_path / "half.safetensors", torch.float16)
    assert all(v.dtype == torch.float32 and torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert half.stat().st_size < 0.55 * full.stat().st_size
    loaded = bert.load(half, device="cpu")
    assert all(p.dtype == torch.float32 for p in loaded.parameters()), "weights come back in the model's dtype"
    for k, v in loaded.state_dict().items():
        torch.testing.assert_close(v, before[k].half().float(), atol=0, rtol=0, msg=f"{k}: fp16 rounding only")


def test_embed_sentence_pools_pieces_drops_specials_and_sees_both_sides(trained):
    model, _ = trained
    a = model.embed_sentence(["the", "cat", "sat", "on", "the", "mat"])
    b = model.embed_sentence(["the", "cat", "sat", "on", "the", "log"])
    assert a.shape == (3, 6, 32)
    assert not torch.allclose(a[2:, 0], b[2:, 0])  # the first word's vector depends on the last word
    torch.testing.assert_close(a[0, :5], b[0, :5])  # layer 0, the embeddings, has no context
    enc = model.tokenizer.encode_words(["the", "toe"])
    states = torch.cat(model(torch.tensor([enc.input_ids]), output_hidden_states=True).hidden_states)
    pieces = [i for i, w in enumerate(enc.word_ids) if w == 1]
    assert len(pieces) > 1
    torch.testing.assert_close(model.embed_sentence(["the", "toe"])[:, 1], states[:, pieces].mean(dim=1))


def test_a_conversion_that_does_not_fit_is_refused_before_anything_is_copied():
    """from_hf's last step: every name of ours filled, nothing of theirs left over, every shape the same."""
    from word2bert.checkpoint import load_converted

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    good = {k: torch.randn_like(v) for k, v in before.items()}
    cases = {
        "missing ['1.bias']": {k: v for k, v in good.items() if k != "1.bias"},
        "not ours ['2.weight']": {**good, "2.weight": torch.ones(2)},
        "0.weight: (3, 2) for our (2, 3)": {**good, "0.weight": torch.ones(3, 2)},
    }
    for message, state in cases.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            load_converted(model, state, "a test state")
        assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items()), "nothing copied"
    load_converted(model, good, "a test state")
    assert all(torch.equal(v, good[k]) for k, v in model.state_dict().items())
