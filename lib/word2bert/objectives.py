"""What a transformer encoder is trained to predict: the comparison chapter's controlled objective ablation.

The four models of the course differ in architecture, objective, tokenizer, data and steps at once. To isolate the
objective, the same BERT-sized encoder (``bert.Bert``'s embeddings and blocks) is trained in three ways:

* ``MLM``: BERT's masked language model (15% of the pieces chosen, 80/10/10), every block attending both ways;
* ``CAUSAL_LM``: GPT's left-to-right language model, every block causal, each position predicting the next piece;
* ``TWO_TOWER_LM``: ELMo's biLM on transformer towers (Peters et al. 2018, section 3.1): a forward tower as GPT's
  and a backward tower attending only to its right, each predicting its neighbour on that side, with the token
  embeddings and the output layer shared between the directions, and each layer's vectors concatenated.

A causal block's first position, [CLS], sees only itself; what has read the whole input is the last piece (GPT
classifies from its last, "extract" token). ``CausalBert`` and ``TwoTowerBert`` therefore hand the heads that read
position 0 (BERT's pooler and ``ClassificationHead``) the vectors that have seen everything: the last piece's, and
for the two towers the forward tower's last piece beside the backward tower's [CLS]. No word's vector changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .bert import Bert, BertConfig, BertForPreTraining
from .checkpoint import load_checkpoint, save_checkpoint
from .pretraining import PretrainingObjective
from .pretraining_data import MLM_PROBABILITY, SentenceObjective
from .transformer import init_weights, padding_mask
from .wordpiece import WordPieceTokenizer


def last_positions(states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """[B, T, D] -> [B, D], each row's last real (right-padded) position."""
    B, T, _ = states.shape
    last = attention_mask.sum(1) - 1 if attention_mask is not None else torch.full((B,), T - 1)
    return states[torch.arange(B, device=states.device), last.to(states.device)]


class CausalBert(Bert):
    """BERT's encoder with GPT's causal mask in every block: a position sees itself and what is left of it."""

    def __init__(self, config: BertConfig, tokenizer: WordPieceTokenizer | None = None):
        super().__init__(config, tokenizer)
        for layer in self.layers:
            layer.attn.causal = True

    def summary(self, states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The vector of the whole input in one layer: the last piece's, which has read every other."""
        return last_positions(states, attention_mask)

    def readout(self, states: list[torch.Tensor], attention_mask: torch.Tensor | None) -> list[torch.Tensor]:
        # position 0 ([CLS], which has read nothing) carries the summary, where BERT's heads look for it
        return [torch.cat([self.summary(s, attention_mask)[:, None], s[:, 1:]], dim=1) for s in states]


class TwoTowerBert(CausalBert):
    """ELMo's two directions as two transformer towers over one embedding: ``layers`` read left to right,
    ``backward_layers`` right to left. Layer l's vector is [forward_l; backward_l]; layer 0 is the embedding twice,
    as ELMo's. The output is twice as wide as each tower (``pooler`` and the heads read 2 * hidden_size)."""

    def __init__(self, config: BertConfig, tokenizer: WordPieceTokenizer | None = None):
        super().__init__(config, tokenizer)
        self.backward_layers = copy.deepcopy(self.layers)
        for layer in self.backward_layers:
            layer.attn.causal = False  # the mask below lets each position see itself and its right instead
        self.pooler = nn.Linear(2 * config.hidden_size, 2 * config.hidden_size)
        self.apply(init_weights)

    def contextualize(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> list[torch.Tensor]:
        T = x.size(1)
        right = torch.ones(T, T, dtype=torch.bool, device=x.device).triu()  # query i sees keys j >= i
        padding = None if attention_mask is None else padding_mask(attention_mask)
        forward, backward = super().contextualize(x, attention_mask), [x]
        for layer in self.backward_layers:
            backward.append(layer(backward[-1], right if padding is None else right & padding))
        return [torch.cat([f, b], dim=-1) for f, b in zip(forward, backward)]

    def summary(self, states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The forward tower's last piece beside the backward tower's first: each has read the whole input."""
        H = states.size(-1) // 2
        return torch.cat([last_positions(states[..., :H], attention_mask), states[:, 0, H:]], dim=-1)


class LanguageModelLoss(nn.Module):
    """The language models' loss on unmasked batches: cross-entropy of the next piece from each forward vector
    and, for two towers, of the previous piece from each backward vector, summed as ELMo's log-likelihoods are,
    through the shared output layer (``model.mlm``: dense, GELU, LayerNorm, decoder tied to the embeddings, its
    ``loss`` computed as one step). Padding neither predicts nor is predicted. Called as ``PretrainingObjective``
    is, it returns the loss."""

    def __init__(self, model: BertForPreTraining, sentence: SentenceObjective | None = None):
        super().__init__()
        self.model = model  # ``sentence`` is accepted for the same signature: an LM has no sentence task

    def forward(self, input_ids, token_type_ids, attention_mask, labels=None, next_sentence_label=None):
        bert = self.model.bert
        states = bert.contextualize(bert.embeddings(input_ids, token_type_ids), attention_mask)[-1]
        real = attention_mask.bool()
        both = real[:, :-1] & real[:, 1:]  # position t and t + 1 both hold pieces
        H = self.model.config.hidden_size
        loss = self.model.mlm.loss(states[:, :-1, :H][both], input_ids[:, 1:][both])
        if isinstance(bert, TwoTowerBert):
            loss = loss + self.model.mlm.loss(states[:, 1:, H:][both], input_ids[:, :-1][both])
        return loss


@dataclass(frozen=True)
class WordObjective:
    """One way of training the encoder: its blocks (``encoder``), its loss module, and how much of the input
    it masks (``mlm_probability``: the language models read theirs whole)."""

    name: str
    encoder: type[Bert]
    loss: type[nn.Module]
    mlm_probability: float
    reads: str  # what a word's vector has seen, as the chapter's tables print it

    def model(self, config: BertConfig, tokenizer: WordPieceTokenizer) -> BertForPreTraining:
        return BertForPreTraining(config, tokenizer, self.encoder)

    def __repr__(self) -> str:
        return self.name


CAUSAL_LM = WordObjective("left-to-right LM", CausalBert, LanguageModelLoss, 0.0, "its left")
MLM = WordObjective("MLM", Bert, PretrainingObjective, MLM_PROBABILITY, "both sides, in every block")
TWO_TOWER_LM = WordObjective("two-tower biLM", TwoTowerBert, LanguageModelLoss, 0.0, "each side in its own tower")
WORD_OBJECTIVES = {o.name: o for o in (CAUSAL_LM, MLM, TWO_TOWER_LM)}


def save(model: BertForPreTraining, objective: WordObjective, path: str | Path) -> Path:
    """A half-precision checkpoint of an ablation model (config, vocabulary and objective in its metadata)."""
    extra = {"vocab": model.tokenizer.vocab, "lowercase": model.tokenizer.lowercase, "objective": objective.name}
    return save_checkpoint(path, model, model.config, extra, torch.float16)


def load(path: str | Path, device: str | torch.device | None = None) -> BertForPreTraining:
    """An ablation model back in full precision, its encoder chosen by the objective it was trained with."""

    def build(config: dict, extra: dict) -> BertForPreTraining:
        tokenizer = WordPieceTokenizer(extra["vocab"], extra["lowercase"])
        return WORD_OBJECTIVES[extra["objective"]].model(BertConfig(**config), tokenizer)

    return load_checkpoint(path, build, device)
