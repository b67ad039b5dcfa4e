"""GloVe (Pennington et al. 2014): word vectors fitted to a corpus's co-occurrence counts.

word2vec streams over the text; GloVe first counts, in a symmetric window, how often each word occurs near each
other word (a pair d words apart adds 1/d), then fits vectors so that w_i·w~_j + b_i + b~_j ≈ log X_ij, each
pair weighted by f(X_ij) = min(1, (X_ij / x_max)^alpha). Frequent pairs count more, but not without bound, and
pairs never seen cost nothing. Trained with AdaGrad on the non-zero counts; the word vector is W + W~.
``GloVe`` offers the same ``wv`` as ``Word2Vec``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn as nn

from .device import training_threads
from .training import progress_bar
from .vectors import TrainedVectors
from .word2vec import encode_corpus


def cooccurrence_counts(
    ids: torch.Tensor, sentence: torch.Tensor, window: int, vocab_size: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Symmetric windowed co-occurrence counts X of a flat corpus (ids [N], sentence numbers [N]).

    Two words d <= window positions apart in the same sentence add 1/d to X[i, j] and to X[j, i]. Returns the
    non-zero entries as (rows, cols, values).
    """
    rows, cols, weights = [], [], []
    for d in range(1, window + 1):
        same = sentence[d:] == sentence[:-d]
        left, right = ids[:-d][same], ids[d:][same]
        rows += [left, right]
        cols += [right, left]
        weights += [torch.full((2 * len(left),), 1.0 / d, dtype=torch.float64, device=ids.device)]
    keys = torch.cat(rows) * vocab_size + torch.cat(cols)
    unique, inverse = torch.unique(keys, return_inverse=True)
    values = torch.zeros(len(unique), dtype=torch.float64, device=ids.device).index_add_(0, inverse, torch.cat(weights))
    return unique // vocab_size, unique % vocab_size, values.float()


def glove_weighting(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """f(x) = (x / x_max)^alpha below x_max, 1 above: rare pairs are noisy, frequent ones should not dominate."""
    return (x / x_max).pow(alpha).clamp(max=1.0)


def glove_loss(
    w: torch.Tensor,
    w_tilde: torch.Tensor,
    b: torch.Tensor,
    b_tilde: torch.Tensor,
    x: torch.Tensor,
    x_max: float = 100.0,
    alpha: float = 0.75,
) -> torch.Tensor:
    """The weighted least-squares objective, summed over a batch of pairs: Σ f(X_ij) (w_i·w~_j + b_i + b~_j -
    log X_ij)². w, w_tilde: [B, D]; b, b_tilde, x: [B]."""
    error = (w * w_tilde).sum(-1) + b + b_tilde - torch.log(x)
    return (glove_weighting(x, x_max, alpha) * error.pow(2)).sum()


@dataclass
class GloVeConfig:
    """The settings of a trained ``GloVe``, as its checkpoint stores them; their defaults are ``GloVe``'s."""

    vector_size: int
    window: int
    min_count: int
    x_max: float
    alpha: float  # the weighting exponent (not a learning rate, unlike word2vec's alpha)
    epochs: int
    learning_rate: float  # AdaGrad's, as in the paper
    batch_size: int  # co-occurrence entries per step
    seed: int


class GloVeModel(nn.Module):
    """Word vectors W, context vectors W~ and their biases, initialised as in the reference code."""

    def __init__(self, vocab_size: int, vector_size: int):
        super().__init__()
        self.W = nn.Embedding(vocab_size, vector_size, sparse=True)
        self.W_tilde = nn.Embedding(vocab_size, vector_size, sparse=True)
        self.b = nn.Embedding(vocab_size, 1, sparse=True)
        self.b_tilde = nn.Embedding(vocab_size, 1, sparse=True)
        for table in (self.W, self.W_tilde, self.b, self.b_tilde):
            nn.init.uniform_(table.weight, -0.5 / vector_size, 0.5 / vector_size)

    def forward(self, i: torch.Tensor, j: torch.Tensor, x: torch.Tensor, x_max: float, alpha: float) -> torch.Tensor:
        return glove_loss(
            self.W(i), self.W_tilde(j), self.b(i).squeeze(-1), self.b_tilde(j).squeeze(-1), x, x_max, alpha
        )


class GloVe(TrainedVectors):
    """Count co-occurrences of ``sentences`` and fit GloVe vectors to them; ``wv`` holds W + W~. On a CPU, training
    runs on ``threads`` torch threads, by default one per idle core (``word2bert.device.cpu_threads``)."""

    config_class = GloVeConfig

    def __init__(
        self,
        sentences: Iterable[Sequence[str]] | None = None,
        vector_size: int = 100,
        window: int = 10,
        min_count: int = 5,
        x_max: float = 100.0,
        alpha: float = 0.75,
        epochs: int = 25,
        learning_rate: float = 0.05,
        seed: int = 0,
        device: str | torch.device | None = None,
        *,
        batch_size: int = 4096,
        progress: bool = True,
        threads: int | None = None,
    ):
        config = GloVeConfig(
            vector_size=vector_size,
            window=window,
            min_count=min_count,
            x_max=x_max,
            alpha=alpha,
            epochs=epochs,
            learning_rate=learning_rate,
            batch_size=batch_size,
            seed=seed,
        )
        super().__init__(config, sentences, device, progress=progress, threads=threads)

    @staticmethod
    def build_model(config: GloVeConfig, vocab_size: int) -> GloVeModel:
        return GloVeModel(vocab_size, config.vector_size)

    def word_vectors(self) -> torch.Tensor:
        return self.model.W.weight + self.model.W_tilde.weight  # the paper's choice: W + W~

    def train(self, sentences: Sequence[Sequence[str]], progress: bool = True, threads: int | None = None) -> None:
        """AdaGrad over the shuffled non-zero counts; ``loss_history`` gets the mean loss per entry per epoch."""
        cfg = self.config
        ids, sentence = encode_corpus(sentences, self.vocab)
        rows, cols, x = (t.to(self.device) for t in cooccurrence_counts(ids, sentence, cfg.window, len(self.vocab)))
        # AdaGrad's squared-gradient sums start at 1, as in the reference code
        optimizer = torch.optim.Adagrad(self.model.parameters(), lr=cfg.learning_rate, initial_accumulator_value=1.0)
        generator = torch.Generator(device=self.device).manual_seed(cfg.seed)
        with warnings.catch_warnings(), training_threads(self.device, threads):
            warnings.filterwarnings("ignore", message="Sparse invariant checks")  # AdaGrad's sparse path, each step
            for _ in progress_bar(range(cfg.epochs), desc="GloVe", unit="epoch", show=progress):
                order = torch.randperm(len(x), generator=generator, device=self.device)
                total = 0.0
                for start in range(0, len(order), cfg.batch_size):
                    batch = order[start : start + cfg.batch_size]
                    loss = self.model(rows[batch], cols[batch], x[batch], cfg.x_max, cfg.alpha)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    total += loss.item()
                self.loss_history.append(total / len(x))
        self._wv = None
