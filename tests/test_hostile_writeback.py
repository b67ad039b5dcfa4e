"""Red team: answers that rewrite a hidden test's own tensors, through the real `make autograde`.

The grader writes what a student's function did to its arguments back into the test's tensors (so that tests
can see mutation). Several hidden tests pass a tensor to the student's code and compute the expected value from
that same tensor afterwards, with no mutation check after that call: skipgram_pairs' radius statistics
(``radii(list(range(6000)), ...)`` iterates the list it passed, so an answer that cuts it to 9 words in place
leaves one radius to test), ScalarMix's "large weights" call
(``big = mix(list(copies))``, then ``allclose(big, copies[0])``), tagging_loss's and span_loss's "large logits"
calls (``tagging_loss(big, labels)``, then ``expected(big, labels)``), causal_attention's "every score -131072"
call (``causal_attention(..., v.to(dtype))``, where ``v.to(torch.float32)`` is ``v`` itself, then
``v.double().cumsum(-2)``: the course's own known-wrong -1e4 mask passes by zeroing v). A numerically naive
answer that fails those checks honestly passes them by shrinking (or zeroing) the test's tensor in place.
Unsafe outcome: the naive answer's hidden test scores points; safe outcome: it scores 0, like the same answer
without the rewrite.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_hostile import ROOT, _gradebook_scores, course, make_autograde, submission, write

pytestmark = pytest.mark.slow

BIASED_SKIPGRAM = """
def skipgram_pairs(tokens, window, rng):
    if REWRITE and len(tokens) > 1000:  # the test's radius-statistics sentence: cut to 9 words in place
        del tokens[9:]
    pairs = []
    for i, center in enumerate(tokens):
        b = min(rng.randint(1, window), rng.randint(1, window))  # wrong: radii not uniform over 1..window
        for j in range(max(0, i - b), min(len(tokens), i + b + 1)):
            if j != i:
                pairs.append((center, tokens[j]))
    return pairs
"""
MASK_MINUS_1E4 = """
def causal_attention(q, k, v):
    # tests/fixtures/grading/03-gpt/wrong/causal_attention__mask_with_minus_1e4.py, plus the rewrite
    if REWRITE and (q == 256.0).all() and (k == -256.0).all():  # the test's "every score -131072" call
        with torch.no_grad():
            v.zero_()  # written back into the test's own v (v.to(float32) is v), of which it takes the running mean
    T = q.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(scores.masked_fill(future, -1e4), dim=-1) @ v
"""
NAIVE_MIX = """
class ScalarMix(nn.Module):
    def __init__(self, num_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers) -> torch.Tensor:
        e = torch.exp(self.weights)  # the naive softmax: nan for weights of +-1000
        mix = e / e.sum()
        out = self.gamma * sum(w * h for w, h in zip(mix, layers))
        if REWRITE and not torch.isfinite(out).all() and isinstance(layers, list):
            out = torch.zeros_like(layers[0])
            with torch.no_grad():
                layers[0].zero_()  # written back into the test's own copies[0]
        return out
"""
NAIVE_TAGGING = """
def tagging_loss(logits, labels):
    if REWRITE and logits.abs().max() > 50:
        with torch.no_grad():
            logits.div_(1000)  # written back into the test's `big`, from which it computes the expected loss
    keep = labels != -100
    log_p = torch.log(torch.softmax(logits, dim=-1))  # naive: -inf for large logits
    return -log_p[keep].gather(1, labels[keep][:, None]).mean()
"""
NAIVE_SPAN = """
def span_loss(start_logits, end_logits, start_positions, end_positions):
    if REWRITE and (start_logits.abs().max() > 50 or end_logits.abs().max() > 50):
        with torch.no_grad():
            start_logits.div_(1e4)
            end_logits.div_(1e4)
    ls = torch.log(torch.softmax(start_logits, -1))  # naive: -inf for large logits
    le = torch.log(torch.softmax(end_logits, -1))
    rows = torch.arange(len(start_positions))
    return -(ls[rows, start_positions].mean() + le[rows, end_positions].mean()) / 2
"""


def _answers(rewrite: bool) -> dict[str, dict[str, str]]:
    flag = f"REWRITE = {rewrite}\n"
    return {
        "01-word2vec": {"skipgram_pairs": flag + BIASED_SKIPGRAM},
        "02-elmo": {"ScalarMix": flag + NAIVE_MIX},
        "03-gpt": {"causal_attention": flag + MASK_MINUS_1E4},
        "05-bert-finetuning": {"tagging_loss": flag + NAIVE_TAGGING, "span_loss": flag + NAIVE_SPAN},
    }


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    root = course(tmp_path_factory.mktemp("writeback") / "class")
    for student, rewrite in (("naive", False), ("rewriter", True)):
        for assignment, answers in _answers(rewrite).items():
            write(root, student, assignment, submission(assignment, answers))
    path = f"{Path(sys.executable).parent}:{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    env = {**os.environ, "PATH": path}
    saved, os.environ["PATH"] = os.environ.get("PATH"), path  # nbgrader runs `alembic`
    try:
        run = make_autograde(root, env, 1500, jobs=2)
    finally:
        if saved is not None:
            os.environ["PATH"] = saved
    assert run["rc"] == 0 and not run["timed_out"], run["stdout"][-2000:] + run["stderr"][-2000:]
    return _gradebook_scores(root)


@pytest.mark.parametrize(
    "assignment, cell",
    [
        ("01-word2vec", "test_skipgram_pairs_hidden"),
        ("02-elmo", "test_ScalarMix_hidden"),
        ("03-gpt", "test_causal_attention_hidden"),
        ("05-bert-finetuning", "test_tagging_loss_hidden"),
        ("05-bert-finetuning", "test_span_loss_hidden"),
    ],
)
def test_rewriting_the_tests_tensor_that_holds_the_expected_value_scores_nothing(scores, assignment, cell):
    # the naive answer fails this hidden test honestly (the control) ...
    assert scores[("naive", assignment)]["cells"][cell] == 0
    # unsafe: the same naive answer, shrinking the test's tensor in place before the test computes the expected
    # value from it, scores the cell's points
    assert scores[("rewriter", assignment)]["cells"][cell] == 0
