"""Fine-tuning heads, losses, span decoding and metrics. (That fine-tuning beats each task's baseline is asserted by
chapter 5's pages, which the book's build runs: tests/test_book.py.)"""

import copy
import itertools

import pytest
import torch
import torch.nn.functional as F

from word2bert import bert, heads, metrics, reporting, tasks
from word2bert import finetune as ft
from word2bert.data import ToyWorld
from word2bert.transformer import MultiHeadSelfAttention


def test_classification_head_reads_cls_through_a_pooler():
    torch.manual_seed(0)
    head = heads.ClassificationHead(16, 3).eval()
    h = torch.randn(4, 7, 16)
    logits = head(h)
    assert logits.shape == (4, 3)
    h2 = h.clone()
    h2[:, 1:] = torch.randn(4, 6, 16)
    torch.testing.assert_close(head(h2), logits, msg="only the first token, [CLS], matters")
    expected = head.classifier(torch.tanh(head.pooler(h[:, 0])))
    torch.testing.assert_close(logits, expected)


def test_tagging_and_span_heads_shapes():
    h = torch.randn(2, 5, 8)
    assert heads.TaggingHead(8, 17).eval()(h).shape == (2, 5, 17)
    span = heads.SpanHead(8)
    start, end = span(h)
    assert start.shape == end.shape == (2, 5)
    torch.testing.assert_close(start, h @ span.qa_outputs.weight[0] + span.qa_outputs.bias[0])
    torch.testing.assert_close(end, h @ span.qa_outputs.weight[1] + span.qa_outputs.bias[1])


def test_tagging_loss_ignores_minus_100_and_span_loss_averages():
    torch.manual_seed(0)
    logits, labels = torch.randn(2, 4, 5), torch.tensor([[1, -100, 3, -100], [-100, 0, 4, 2]])
    keep = labels != -100
    torch.testing.assert_close(heads.tagging_loss(logits, labels), F.cross_entropy(logits[keep], labels[keep]))
    s, e = torch.randn(3, 6), torch.randn(3, 6)
    sp, ep = torch.tensor([0, 2, 5]), torch.tensor([1, 2, 5])
    torch.testing.assert_close(heads.span_loss(s, e, sp, ep), (F.cross_entropy(s, sp) + F.cross_entropy(e, ep)) / 2)


@pytest.mark.parametrize("seed", range(20))
def test_best_span_is_the_best_valid_span(seed):
    g = torch.Generator().manual_seed(seed)
    T = 12
    start, end = torch.randn(T, generator=g), torch.randn(T, generator=g)
    context = torch.rand(T, generator=g) < 0.6
    context[5] = True
    max_len = int(torch.randint(1, 5, (1,), generator=g))
    s, e = heads.best_span(start, end, context, max_len)
    assert s <= e and e - s + 1 <= max_len and context[s] and context[e]
    valid = [
        (i, j)
        for i, j in itertools.product(range(T), repeat=2)
        if i <= j and j - i + 1 <= max_len and context[i] and context[j]
    ]
    assert start[s] + end[e] == max(start[i] + end[j] for i, j in valid)


def test_best_span_prefers_order_over_higher_scores():
    start = torch.tensor([0.0, 0.0, 9.0, 0.0])
    end = torch.tensor([0.0, 9.0, 0.0, 1.0])  # the best end lies before the best start
    assert heads.best_span(start, end, torch.ones(4, dtype=torch.bool), 4) == (2, 3)


def test_metrics():
    assert metrics.macro_f1([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx((2 / 3 + 0.8) / 2)
    assert metrics.span_f1(["a", "red", "car"], ["red", "car"]) == pytest.approx(0.8)
    assert metrics.qa_scores([("red", "car")], [("red", "car")]) == {"exact_match": 1.0, "span_f1": 1.0}


def test_piece_labels_first_piece_or_every_piece():
    word_ids = [None, 0, 1, 1, 1, 2, None]  # [CLS] the mo ##us ##e ate [SEP]
    assert tasks.piece_labels(word_ids, [5, 6, 7]) == [-100, 5, 6, -100, -100, 7, -100]
    assert tasks.piece_labels(word_ids, [5, 6, 7], label_all_pieces=True) == [-100, 5, 6, 6, 6, 7, -100]


@pytest.fixture(scope="module")
def encoder():
    return bert.pretrained(device="cpu").bert


def test_encode_labels_first_pieces_and_answer_spans(encoder):
    tok = encoder.tokenizer
    sentence = ToyWorld(0).sentences(1, "heldout")[0]
    f = ft.encode("pos", tok, sentence)
    labelled = [w for w, label in zip(f.word_ids, f.target["labels"]) if label != -100]
    assert labelled == list(range(len(sentence.tokens))), "exactly the first piece of every word is labelled"
    for x in ToyWorld(0).qa(20, "heldout"):
        f = ft.encode("qa", tok, x)
        s, e = f.target["start"], f.target["end"]
        assert f.word_ids[s] == x.start and f.word_ids[e] == x.end and f.token_type_ids[s] == 1


def test_set_dropout_switches_on_dropout_everywhere_in_the_encoder(encoder):
    enc = copy.deepcopy(encoder)
    ft.set_dropout(enc, 0.3)
    rates = [m.p for m in enc.modules() if isinstance(m, torch.nn.Dropout)]
    rates += [m.dropout for m in enc.modules() if isinstance(m, MultiHeadSelfAttention)]
    assert len(rates) > enc.config.num_hidden_layers and set(rates) == {0.3}, rates
    assert enc.config.dropout == 0.3 and encoder.config.dropout == 0.0, "the original encoder must stay untouched"
    ids = torch.tensor([[encoder.tokenizer.cls_id, 10, 11, 12, encoder.tokenizer.sep_id]])
    enc.train()
    assert not torch.equal(enc(ids).last_hidden_state, enc(ids).last_hidden_state), "dropout is active in training"
    enc.eval()
    torch.testing.assert_close(enc(ids).last_hidden_state, enc(ids).last_hidden_state)


def test_results_table_and_learning_curve_plot():
    table = reporting.results_table([("nli", "BERT", {"accuracy": (0.8912, 0.02), "macro_f1": (0.5, 0.0)})])
    assert table.splitlines() == [
        "| task | model | metric | mean ± std |",
        "|---|---|---|---|",
        "| nli | BERT | accuracy | 0.891 ± 0.020 |",
        "| nli | BERT | macro_f1 | 0.500 ± 0.000 |",
    ]
    import matplotlib

    matplotlib.use("Agg")
    curve = {"n_train": [30, 100, 300], "BERT": [0.8, 0.9, 0.95], "baseline": [0.7, 0.85, 0.96]}
    ax = reporting.plot_learning_curve(curve, "part of speech", "token accuracy")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["30", "100", "300"], "ticks at the sizes, plainly"
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [curve["BERT"], curve["baseline"]]


@pytest.mark.slow
def test_a_new_task_is_one_object(encoder):
    """Fine-tuning never asks which task it runs: a task defined here (is there a "not" in the review?) goes
    through examples, encoding, training, prediction, scoring, errors and the baseline with no other change."""
    import dataclasses

    def negation(world, n, split):
        return [dataclasses.replace(x, label=int("not" in x.tokens)) for x in world.sentiment(n, split)]

    task = tasks.Classification("negation", 2, negation, lambda x: [x.tokens])
    labels = [x.label for x in ft.examples(task, 200, "unseen")]
    assert 0.2 < sum(labels) / len(labels) < 0.8, "both labels occur, so the score below is not a majority vote"
    # Scored on new examples of the training templates: that the task is learnt is what this test needs. Whether a
    # "not" in a template never seen in training is still found depends on the checkpoint and the recipe (the
    # course BERT, seeds 0-4: in none at these settings, 0.63-0.71, the majority class; in 3 of 5 with 200 steps or
    # with lr 3e-3), which chapter 5 measures for sentiment.
    config = ft.FinetuneConfig(n_train=200, n_test=100, steps=60, test_split="unseen")
    result = ft.finetune(task, encoder, config, device="cpu")
    assert result.task is task and set(result.metrics) == {"accuracy", "macro_f1"}
    assert result.metrics["accuracy"] >= 0.9, result.metrics
    assert all(p != x.label for x, p in result.errors(100)), "errors() lists only wrong predictions"
    assert ft.baseline(task, 200, 100)["accuracy"] >= 0.9, "bags of words see the word itself"
    with pytest.raises(ValueError, match="unknown task 'negation'"):
        ft.finetune("negation", encoder)  # a task object is not registered by being made
