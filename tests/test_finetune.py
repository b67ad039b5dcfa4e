"""Fine-tuning heads, losses, span decoding, metrics, and the four tasks against their baselines."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from word2bert import bert
from word2bert import finetune as ft
from word2bert.data import ToyWorld


def test_classification_head_reads_cls_through_a_pooler():
    torch.manual_seed(0)
    head = ft.ClassificationHead(16, 3).eval()
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
    assert ft.TaggingHead(8, 17).eval()(h).shape == (2, 5, 17)
    span = ft.SpanHead(8)
    start, end = span(h)
    assert start.shape == end.shape == (2, 5)
    torch.testing.assert_close(start, h @ span.qa_outputs.weight[0] + span.qa_outputs.bias[0])
    torch.testing.assert_close(end, h @ span.qa_outputs.weight[1] + span.qa_outputs.bias[1])


def test_tagging_loss_ignores_minus_100_and_span_loss_averages():
    torch.manual_seed(0)
    logits, labels = torch.randn(2, 4, 5), torch.tensor([[1, -100, 3, -100], [-100, 0, 4, 2]])
    keep = labels != -100
    torch.testing.assert_close(ft.tagging_loss(logits, labels), F.cross_entropy(logits[keep], labels[keep]))
    s, e = torch.randn(3, 6), torch.randn(3, 6)
    sp, ep = torch.tensor([0, 2, 5]), torch.tensor([1, 2, 5])
    torch.testing.assert_close(ft.span_loss(s, e, sp, ep), (F.cross_entropy(s, sp) + F.cross_entropy(e, ep)) / 2)


@pytest.mark.parametrize("seed", range(20))
def test_best_span_is_the_best_valid_span(seed):
    g = torch.Generator().manual_seed(seed)
    T = 12
    start, end = torch.randn(T, generator=g), torch.randn(T, generator=g)
    context = torch.rand(T, generator=g) < 0.6
    context[5] = True
    max_len = int(torch.randint(1, 5, (1,), generator=g))
    s, e = ft.best_span(start, end, context, max_len)
    assert s <= e and e - s + 1 <= max_len and context[s] and context[e]
    valid = [(i, j) for i, j in itertools.product(range(T), repeat=2)
             if i <= j and j - i + 1 <= max_len and context[i] and context[j]]
    assert start[s] + end[e] == max(start[i] + end[j] for i, j in valid)


def test_best_span_prefers_order_over_higher_scores():
    start = torch.tensor([0.0, 0.0, 9.0, 0.0])
    end = torch.tensor([0.0, 9.0, 0.0, 1.0])  # the best end lies before the best start
    assert ft.best_span(start, end, torch.ones(4, dtype=torch.bool), 4) == (2, 3)


def test_metrics():
    assert ft.macro_f1([0, 0, 1, 1], [0, 1, 1, 1], 2) == pytest.approx((2 / 3 + 0.8) / 2)
    assert ft.span_f1(["a", "red", "car"], ["red", "car"]) == pytest.approx(0.8)
    assert ft.qa_scores([("red", "car")], [("red", "car")]) == {"exact_match": 1.0, "span_f1": 1.0}


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


# Margins over the baseline for one seed of a short run, set well below what the committed checkpoint reaches
# (measured: sentiment 0.65 vs 0.42, NLI 0.84 vs 0.56, QA 0.57 vs 0.41) so that the test is about "clearly
# better", not the last digit. POS is the exception: the toy world's held-out sentences reuse the training words,
# so a word's most frequent tag already scores 0.98 and fine-tuned BERT (0.94 here) only comes close: the test
# asks for no more than 0.05 below it. Classification and tagging are scored on held-out templates. QA is scored
# on new passages asked with the training question templates: on held-out question templates ("in which city does
# X live ?" where training asks "where does X live ?") the small BERT reaches 0.17 exact match, below the
# word-overlap heuristic (0.53), because the toy world never says that "lives in" answers a question about a city.
MARGINS = {"sentiment": ("accuracy", 0.1), "nli": ("accuracy", 0.15), "pos": ("token_accuracy", -0.05),
           "qa": ("exact_match", 0.05)}


@pytest.mark.parametrize("task", ft.TASKS)
def test_finetuned_bert_against_the_baseline(task, encoder):
    split = "unseen" if task == "qa" else "heldout"
    config = ft.FinetuneConfig(n_train=400, n_test=150, steps=150 if task == "qa" else 100, test_split=split)
    metric, margin = MARGINS[task]
    result = ft.finetune(task, encoder, config, seed=0, device="cpu")
    base = ft.baseline(task, config.n_train, config.n_test, seed=0, test_split=split)
    assert result.metrics[metric] >= base[metric] + margin, (task, result.metrics, base)
