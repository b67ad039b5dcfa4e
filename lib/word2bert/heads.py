"""The small heads that fine-tuning puts on BERT (Devlin et al. 2019, figure 4), with their losses.

The encoder gives one vector per piece, ``hidden_states [B, T, H]``; the heads differ only in which vectors they
read and what they predict:

* ``ClassificationHead``: one label per sentence or sentence pair, from the first vector, [CLS];
* ``TaggingHead``: one label per piece (``tagging_loss`` ignores the unlabelled ones);
* ``SpanHead``: the start and end of an answer in the passage (``span_loss``), decoded by ``best_span``.

Exercise 5 asks students to write these; ``word2bert.tasks`` says which task uses which.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ClassificationHead(nn.Module):
    """A sentence's (or pair's) label from its first vector, [CLS]: BERT's pooler (dense + tanh), dropout, a linear
    layer to the labels. ``tasks.Classification.make_head`` starts the pooler from the pre-trained one (NSP's)."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float = 0.1):
        super().__init__()
        self.pooler = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """[B, T, H] -> raw logits [B, num_labels]."""
        pooled = torch.tanh(self.pooler(hidden_states[:, 0]))
        return self.classifier(self.dropout(pooled))


class TaggingHead(nn.Module):
    """One label per piece: dropout, then a linear layer on every vector. [B, T, H] -> [B, T, num_tags]."""

    def __init__(self, hidden_size: int, num_tags: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_tags)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.dropout(hidden_states))


class SpanHead(nn.Module):
    """Start and end logits of the answer from one linear layer (the paper's S and E vectors):
    [B, T, H] -> (start_logits [B, T], end_logits [B, T])."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.qa_outputs = nn.Linear(hidden_size, 2)

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        start, end = self.qa_outputs(hidden_states).unbind(dim=-1)
        return start, end


def tagging_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the labelled positions (labels -100 are ignored: padding, specials, later pieces)."""
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


def span_loss(
    start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor, end_positions: torch.Tensor
) -> torch.Tensor:
    """(CE(start) + CE(end)) / 2: the answer's first and last piece, each a softmax over the positions."""
    return (F.cross_entropy(start_logits, start_positions) + F.cross_entropy(end_logits, end_positions)) / 2


def best_span(
    start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor, max_answer_len: int
) -> tuple[int, int]:
    """The span (s, e) maximising start_logits[s] + end_logits[e] with s <= e, e - s + 1 <= max_answer_len and both
    ends in the context (the passage, not the question or special tokens). Scores all T x T pairs at once."""
    T = start_logits.size(-1)
    scores = start_logits[:, None] + end_logits[None, :]
    i = torch.arange(T, device=scores.device)
    length = i[None, :] - i[:, None] + 1
    valid = (length >= 1) & (length <= max_answer_len) & context_mask[:, None] & context_mask[None, :]
    if not valid.any():
        raise ValueError("no valid span: the context mask is empty or max_answer_len < 1")
    best = scores.masked_fill(~valid, float("-inf")).flatten().argmax().item()
    return divmod(best, T)
