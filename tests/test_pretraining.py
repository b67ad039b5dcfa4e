"""BERT's pre-training data (masking statistics, NSP pairs, segments, truncation) and the loop on 1 and 2 ranks."""

import itertools
import json
import math
import os
import random
import subprocess
import sys

import pytest
import torch

from word2bert.pretraining_data import (
    IS_NEXT,
    NOT_NEXT,
    PretrainingCollator,
    PretrainingInstance,
    create_pretraining_instances,
    mask_tokens,
)
from word2bert.wordpiece import WordPieceTokenizer, build_pair_input, truncate_seq_pair

V = 1000


def batch_with_specials(seed=0, shape=(200, 500)):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, shape, generator=g)
    special = torch.rand(shape, generator=g) < 0.1
    ids[special] = 2  # a special id
    return ids, special


def test_masking_statistics_80_10_10():
    ids, special = batch_with_specials()
    before = ids.clone()
    corrupted, labels = mask_tokens(
        ids, special, vocab_size=V, mask_token_id=4, generator=torch.Generator().manual_seed(1)
    )
    assert torch.equal(ids, before), "the input must not be modified"
    chosen = labels != -100
    n_candidates = (~special).sum().item()
    # 5 standard deviations of a binomial: a correct implementation fails with probability < 1e-6.
    p = chosen.sum().item() / n_candidates
    assert abs(p - 0.15) < 5 * math.sqrt(0.15 * 0.85 / n_candidates)
    assert torch.equal(labels[chosen], ids[chosen]), "labels hold the original ids"
    n = chosen.sum().item()
    masked = (corrupted[chosen] == 4).float().mean().item()
    kept = (corrupted[chosen] == ids[chosen]).float().mean().item()
    changed = ((corrupted[chosen] != 4) & (corrupted[chosen] != ids[chosen])).float().mean().item()
    # random ids may hit [MASK] or the original (probability 1/V each)
    for observed, expected in ((masked, 0.8 + 0.1 / V), (kept, 0.1 + 0.1 / V), (changed, 0.1 - 0.2 / V)):
        assert abs(observed - expected) < 5 * math.sqrt(expected * (1 - expected) / n)
    assert torch.equal(corrupted[~chosen], ids[~chosen]), "unchosen positions stay as they are"


def test_special_tokens_never_masked_and_generator_reproducible():
    ids, special = batch_with_specials(seed=3)
    runs = [
        mask_tokens(ids, special, vocab_size=V, mask_token_id=4, generator=torch.Generator().manual_seed(s))
        for s in (7, 7, 8)
    ]
    for corrupted, labels in runs:
        assert (labels[special] == -100).all()
        assert torch.equal(corrupted[special], ids[special])
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    assert not torch.equal(runs[0][1], runs[2][1])


def test_whole_word_masking_takes_every_piece_of_a_word():
    g = torch.Generator().manual_seed(0)
    ids, special = batch_with_specials(seed=5, shape=(100, 300))
    word_starts = (torch.rand(ids.shape, generator=g) < 0.5) | special
    word_starts[:, 0] = True
    _, labels = mask_tokens(ids, special, vocab_size=V, mask_token_id=4, generator=g, word_starts=word_starts)
    chosen = labels != -100
    word_of = torch.where(word_starts, torch.arange(ids.size(1)), 0).cummax(-1).values
    words_chosen = 0
    words = 0
    for row in range(ids.size(0)):
        for start in word_starts[row].nonzero().flatten().tolist():
            if special[row, start]:
                continue
            pieces = (word_of[row] == start).nonzero().flatten()
            got = chosen[row, pieces]
            assert got.all() or not got.any(), "a word is masked whole or not at all"
            words += 1
            words_chosen += int(got.all())
    assert abs(words_chosen / words - 0.15) < 5 * math.sqrt(0.15 * 0.85 / words)


def test_truncate_seq_pair():
    a, b = list(range(10)), list(range(100, 104))
    ta, tb = truncate_seq_pair(a, b, 8)
    assert (ta, tb) == (list(range(4)), b), "the longer segment loses its last tokens; B wins nothing on a tie"
    ta, tb = truncate_seq_pair([1, 2, 3], [4, 5, 6], 5)
    assert (ta, tb) == ([1, 2, 3], [4, 5]), "on a tie B is cut"
    assert a == list(range(10)), "inputs are not modified"
    rng = random.Random(0)
    fronts = 0
    for _ in range(200):
        ta, tb = truncate_seq_pair(a, b, 8, rng)
        assert len(ta) + len(tb) == 8 and tb == b
        start = ta[0]
        assert ta == list(range(start, start + len(ta))), "a contiguous piece of A remains"
        fronts += start > 0
    assert 20 < fronts < 200, "the reference cuts at either end at random"


def test_build_pair_input_segments():
    ids, types = build_pair_input([7, 8], [9], cls_id=2, sep_id=3)
    assert ids == [2, 7, 8, 3, 9, 3]
    assert types == [0, 0, 0, 0, 1, 1]
    ids, types = build_pair_input(list(range(10, 20)), [5, 6], cls_id=2, sep_id=3, max_len=8)
    assert len(ids) == 8 and ids[-3:] == [5, 6, 3] and types.count(1) == 3


def synthetic_documents(n_docs=60, seed=0):
    """Token = doc * 1000 + running position in the doc, so a test can tell where each token came from."""
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        pos, doc = 0, []
        for _ in range(rng.randint(1, 9)):
            k = rng.randint(2, 12)
            doc.append([d * 1000 + pos + i for i in range(k)])
            pos += k
        docs.append(doc)
    return docs


@pytest.mark.parametrize("max_seq_length", [16, 40, 128])
def test_nsp_instances_document_rule_lengths_and_balance(max_seq_length):
    instances = create_pretraining_instances(synthetic_documents(), max_seq_length, seed=1, dupe_factor=10)
    assert instances
    for x in instances:
        assert x.tokens_a and x.tokens_b
        assert len(x.tokens_a) + len(x.tokens_b) <= max_seq_length - 3
        doc_a = {t // 1000 for t in x.tokens_a}
        doc_b = {t // 1000 for t in x.tokens_b}
        assert len(doc_a) == 1 and len(doc_b) == 1, "a segment never crosses documents"
        if x.is_random_next:
            assert doc_a != doc_b, "a random B comes from another document"
            assert x.next_sentence_label == NOT_NEXT
        else:
            assert doc_a == doc_b and x.next_sentence_label == IS_NEXT
            assert min(x.tokens_b) > max(x.tokens_a), "the actual next text follows A"
            assert x.tokens_a == list(range(x.tokens_a[0], x.tokens_a[-1] + 1)), "A is contiguous"
    not_next = sum(x.is_random_next for x in instances) / len(instances)
    assert not_next == 0.5, "the surplus of the larger class is dropped: labels are balanced"


@pytest.mark.parametrize("max_seq_length", [16, 40, 128])
def test_sop_instances_are_one_documents_text_in_or_out_of_order(max_seq_length):
    """ALBERT's SOP: A and B are consecutive text of one document (each a contiguous run, even one-sentence
    chunks); a negative is the same pair swapped, so B comes before A. About half are negatives."""
    from word2bert.pretraining_data import SOP

    docs = synthetic_documents()
    instances = create_pretraining_instances(docs, max_seq_length, seed=1, dupe_factor=10, objective=SOP)
    assert {x.tokens_a[0] // 1000 for x in instances} == set(range(len(docs))), "one-sentence documents too"
    for x in instances:
        assert x.tokens_a and x.tokens_b and len(x.tokens_a) + len(x.tokens_b) <= max_seq_length - 3
        assert len({t // 1000 for t in x.tokens_a + x.tokens_b}) == 1, "SOP never takes text from another document"
        for segment in (x.tokens_a, x.tokens_b):
            assert segment == list(range(segment[0], segment[-1] + 1)), "each segment is contiguous text"
        first, second = (x.tokens_b, x.tokens_a) if x.is_random_next else (x.tokens_a, x.tokens_b)
        assert max(first) < min(second), "a positive is in the document's order, a negative is swapped"
    assert sum(x.is_random_next for x in instances) / len(instances) == 0.5


def test_mlm_alone_trains_no_sentence_classifier(tokenizer):
    """MLM_ONLY: consecutive text only, every pair IsNext, and the loss is MLM's without a classifier term."""
    from word2bert.bert import BertConfig, BertForPreTraining
    from word2bert.pretraining import PretrainingObjective
    from word2bert.pretraining_data import MLM_ONLY, SOP

    docs = synthetic_documents()
    instances = create_pretraining_instances(docs, 40, seed=1, objective=MLM_ONLY)
    assert instances and not any(x.is_random_next for x in instances)
    assert all(max(x.tokens_a) < min(x.tokens_b) and x.tokens_a[0] // 1000 == x.tokens_b[0] // 1000 for x in instances)
    torch.manual_seed(0)
    config = BertConfig(len(tokenizer.vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    model = BertForPreTraining(config).eval()
    a = tokenizer.encode_words("the cat sat on the mat".split()).input_ids[1:-1]
    batch = PretrainingCollator(tokenizer, mlm_probability=0.3, seed=1)([PretrainingInstance(a, a[::-1], True)] * 4)
    loss = PretrainingObjective(model, MLM_ONLY)(**batch)
    out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    mlm = torch.nn.functional.cross_entropy(out.prediction_logits.flatten(0, 1), batch["labels"].flatten())
    torch.testing.assert_close(loss, mlm)
    with_sop = PretrainingObjective(model, SOP)(**batch)
    torch.testing.assert_close(
        with_sop - loss, torch.nn.functional.cross_entropy(out.seq_relationship_logits, batch["next_sentence_label"])
    )


def test_nsp_needs_two_documents():
    with pytest.raises(ValueError, match="two documents"):
        create_pretraining_instances([[[1, 2], [3, 4]], [], [[]]], 32)


@pytest.fixture(scope="module")
def tokenizer():
    texts = ["the cat sat on the mat .", "the dog barked at the postman .", "playing and jumping happily"] * 3
    return WordPieceTokenizer.train(texts, 60, min_frequency=1, progress=False)


def test_collator_batch_segments_and_dynamic_masking(tokenizer):
    a = tokenizer.encode_words("the cat sat on the mat".split()).input_ids[1:-1]
    b = tokenizer.encode_words("playing happily".split()).input_ids[1:-1]
    instances = [PretrainingInstance(a, b, False), PretrainingInstance(b, a[:2], True)] * 50
    collate = PretrainingCollator(tokenizer, mlm_probability=0.5, whole_word_mask=True, seed=0)
    batch = collate(instances)
    T = len(a) + len(b) + 3
    assert batch["input_ids"].shape == (100, T)
    assert batch["next_sentence_label"][:2].tolist() == [IS_NEXT, NOT_NEXT]
    assert batch["token_type_ids"][0].tolist() == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert batch["attention_mask"][1].tolist() == [1] * (len(b) + len(a[:2]) + 3) + [0] * (len(a) - 2)
    clean = torch.tensor(build_pair_input(b, a[:2], cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id)[0])
    special = torch.isin(clean, torch.tensor([tokenizer.cls_id, tokenizer.sep_id]))
    assert (batch["labels"][1, : len(clean)][special] == -100).all() and (
        batch["labels"][1, len(clean) :] == -100
    ).all()
    assert not torch.equal(collate(instances)["labels"], batch["labels"]), "each batch draws new masks"


def test_the_training_objective_is_the_models_own_loss(tokenizer):
    """PretrainingObjective runs the MLM head on the masked positions only; its loss must be BertForPreTraining's
    own (tests/test_losses.py: the cross-entropy of every position's logits), or training optimises another loss."""
    from word2bert.bert import BertConfig, BertForPreTraining
    from word2bert.pretraining import PretrainingObjective

    torch.manual_seed(0)
    model = BertForPreTraining(
        BertConfig(
            vocab_size=len(tokenizer.vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
    ).eval()
    a = tokenizer.encode_words("the cat sat on the mat".split()).input_ids[1:-1]
    b = tokenizer.encode_words("playing happily".split()).input_ids[1:-1]
    batch = PretrainingCollator(tokenizer, mlm_probability=0.3, seed=1)(
        [PretrainingInstance(a, b, False), PretrainingInstance(b, a[:3], True)] * 4
    )
    assert (batch["labels"] != -100).any() and (batch["attention_mask"] == 0).any()
    torch.testing.assert_close(PretrainingObjective(model)(**batch), model(**batch).loss)


def test_evaluation_runs_where_the_model_is(tokenizer, monkeypatch):
    """A model loaded onto the CPU is scored on the CPU when the default device is another (a reader's GPU): the
    book's NSP table loads the checkpoint with device="cpu" and calls ``evaluate_pretraining`` without one (it failed
    on CUDA)."""
    from word2bert.bert import BertConfig, BertForPreTraining
    from word2bert.pretraining import eval_batches, evaluate_pretraining

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer.vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    model = BertForPreTraining(config, tokenizer)
    a = tokenizer.encode_words("the cat sat on the mat".split()).input_ids[1:-1]
    batches = eval_batches([PretrainingInstance(a, a[:3], False), PretrainingInstance(a[:2], a, True)] * 4, tokenizer)
    monkeypatch.setenv("W2B_DEVICE", "meta")  # a default device the CPU model is not on
    scores = evaluate_pretraining(model, batches)
    assert 0 <= scores["nsp_accuracy"] <= 1 and math.isfinite(scores["loss"]), scores


def test_pretrain_is_the_shared_loop_with_evaluation_and_checkpoints_as_callbacks(tokenizer):
    """``pretrain`` is set-up plus ``training.train``: its parameters and losses must be those of a hand loop of
    ``train_step`` over the same batches (several epochs, with dropout, so the order of random draws counts too),
    and its callback must evaluate and save at the configured steps and at the end."""
    from torch.utils.data import DataLoader, RandomSampler

    from word2bert.bert import BertConfig, BertForPreTraining
    from word2bert.pretraining import PretrainConfig, PretrainingObjective, parameter_digest, pretrain
    from word2bert.pretraining_data import PretrainingDataset
    from word2bert.training import TrainConfig, make_optimizer, train_step

    a = tokenizer.encode_words("the cat sat on the mat".split()).input_ids[1:-1]
    b = tokenizer.encode_words("playing happily".split()).input_ids[1:-1]
    instances = [PretrainingInstance(a, b, False), PretrainingInstance(b, a[:2], True)] * 12  # 3 batches an epoch
    config = PretrainConfig(
        train=TrainConfig(steps=10, lr=1e-2, warmup_steps=2, schedule="linear"),
        batch_size=8,
        eval_every=4,
        checkpoint_every=3,
        seed=5,
    )

    def tiny_bert():
        torch.manual_seed(0)
        return BertForPreTraining(
            BertConfig(
                vocab_size=len(tokenizer.vocab),
                hidden_size=16,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=32,
                dropout=0.1,
            ),
            tokenizer,
        )

    model, saved = tiny_bert(), []
    result = pretrain(model, instances, tokenizer, config, instances[:4], "cpu", lambda m: saved.append(m))
    assert [e["step"] for e in result.evals] == [4, 8, 10] and saved == [model] * 4  # steps 3, 6, 9 and 10

    hand = tiny_bert()
    torch.manual_seed(config.seed)
    dataset = PretrainingDataset(instances)
    sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(config.seed))
    collate = PretrainingCollator(tokenizer, config.mlm_probability, seed=config.seed)
    loader = DataLoader(dataset, config.batch_size, sampler=sampler, collate_fn=collate, drop_last=True)
    objective = PretrainingObjective(hand)
    optimizer, scheduler = make_optimizer(hand, config.train)
    batches = itertools.islice((batch for _ in range(4) for batch in loader), 10)
    losses = [train_step(objective, batch, lambda m, b: m(**b), optimizer, scheduler) for batch in batches]
    assert result.losses == losses
    assert result.parameter_digests == [parameter_digest(hand)]


def run_script(args, n_proc, tmp_path):
    """The pre-training script on a tiny config, on the CPU, with ``n_proc`` processes (torchrun when > 1)."""
    metrics = tmp_path / f"metrics{n_proc}.json"
    common = [
        "--num-tokens",
        "6000",
        "--wordnet-fraction",
        "0",
        "--vocab-size",
        "300",
        "--max-seq-length",
        "48",
        "--layers",
        "2",
        "--hidden",
        "32",
        "--heads",
        "2",
        "--steps",
        "40",
        "--long-steps",
        "0",
        "--batch-size",
        "16",
        "--warmup-steps",
        "4",
        "--lr",
        "3e-3",
        "--eval-every",
        "0",
        "--checkpoint-every",
        "0",
        "--dropout",
        "0",
        "--out",
        str(tmp_path / f"bert{n_proc}.safetensors"),
        "--metrics",
        str(metrics),
        "--no-card",
    ]
    launcher = [sys.executable, "-m", "word2bert.scripts.pretrain_bert"]
    if n_proc > 1:
        launcher = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={n_proc}",
            "-m",
            "word2bert.scripts.pretrain_bert",
        ]
    env = {**os.environ, "W2B_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}
    # generous: two ranks start slowly on a machine busy with the rest of the suite
    done = subprocess.run(launcher + common + args, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(metrics.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_torchrun_two_ranks_match_one_process(tmp_path):
    single = run_script([], 1, tmp_path)
    ddp = run_script([], 2, tmp_path)
    print(
        f"eval loss: 1 process {single['eval']['loss']:.4f}, 2 ranks {ddp['eval']['loss']:.4f}; final train loss: "
        f"{single['final_train_loss']:.4f} vs {ddp['final_train_loss']:.4f}"
    )
    assert ddp["world_size"] == 2 and len(ddp["parameter_digests"]) == 2
    assert ddp["parameter_digests"][0] == ddp["parameter_digests"][1], "both ranks end with the same parameters"
    start = math.log(single["vocab_size"]) + math.log(2)  # the loss of uniform guesses
    assert single["eval"]["loss"] < start - 0.5, "the tiny run learns something, so the comparison means something"
    assert abs(ddp["eval"]["loss"] - single["eval"]["loss"]) <= 0.1 * single["eval"]["loss"]
    assert abs(ddp["final_train_loss"] - single["final_train_loss"]) <= 0.1 * single["final_train_loss"]
    assert (tmp_path / "bert2.safetensors").is_file()
