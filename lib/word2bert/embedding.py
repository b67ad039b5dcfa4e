"""The one interface every model of the course offers, so chapters can compare them side by side.

``embed_sentence(tokens: list[str]) -> Tensor[num_layers + 1, len(tokens), dim]``: one vector per input word per
layer, as AllenNLP's ``ElmoEmbedder.embed_sentence``. Layer 0 is the input representation, before any context:
ELMo's character encoder output; for GPT the token's embedding plus the position's; for BERT the same sum plus
the segment's, layer-normalised. Models that split words into pieces (BPE, WordPiece) give each word the mean of
its pieces (``mean_pool_pieces``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Embedder(Protocol):
    def embed_sentence(self, tokens: list[str]) -> torch.Tensor: ...


def embed_sentences(model: Embedder, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[torch.Tensor]:
    """``model.embed_sentence`` of each sentence, in order, computed in batches of sentences of similar length when
    the model offers ``embed_batch`` (ELMo, GPT and BERT: tens of times faster on a CPU than one at a time)."""
    if not hasattr(model, "embed_batch"):
        return [model.embed_sentence(list(s)) for s in sentences]
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))  # little padding in each batch
    out: list[torch.Tensor | None] = [None] * len(sentences)
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            for i, vectors in zip(chunk, model.embed_batch([list(sentences[i]) for i in chunk])):
                out[i] = vectors.clone()  # not a view that keeps the whole batch alive
    return out


def mean_pool_pieces(states: torch.Tensor, word_ids: Sequence[int | None], num_words: int) -> torch.Tensor:
    """Average piece vectors into word vectors.

    states: [L, P, D], one vector per piece per layer. word_ids: length P, the word each piece belongs to
    (``None`` for pieces that belong to no word, such as [CLS] or [SEP]). Returns [L, num_words, D].
    """
    L, P, D = states.shape
    if len(word_ids) != P:
        raise ValueError(f"word_ids has {len(word_ids)} entries for {P} pieces")
    keep = [i for i, w in enumerate(word_ids) if w is not None]
    index = torch.tensor([word_ids[i] for i in keep], dtype=torch.long, device=states.device)
    if keep and (index.min() < 0 or index.max() >= num_words):
        raise ValueError(f"word ids must lie in [0, {num_words})")
    sums = states.new_zeros(L, num_words, D).index_add_(1, index, states[:, keep])
    counts = torch.zeros(num_words, dtype=states.dtype, device=states.device).index_add_(
        0, index, torch.ones(len(keep), dtype=states.dtype, device=states.device)
    )
    if (counts == 0).any():
        missing = (counts == 0).nonzero().flatten().tolist()
        raise ValueError(f"words {missing} have no pieces")
    return sums / counts[None, :, None]


def word_vectors(model: Embedder, word: str, sentences: Sequence[str]) -> torch.Tensor:
    """The vectors of ``word`` in each sentence (plain text, tokenised as the course tokenises: lower case):
    [num_layers + 1, len(sentences), dim]. The word's first occurrence in each sentence is taken."""
    from .data.vocab import tokenize

    out = []
    for text in sentences:
        tokens = tokenize(text)
        if word not in tokens:
            raise ValueError(f"{word!r} is not a word of {text!r} (its words: {tokens})")
        with torch.no_grad():
            out.append(model.embed_sentence(tokens)[:, tokens.index(word)].float().cpu())
    return torch.stack(out, dim=1)
