"""word2vec: skip-gram and CBOW with negative sampling (Mikolov et al. 2013), as in the original C code.

The pieces, in the order training uses them:

* ``keep_probability``: frequent words are dropped at random before windows are cut (subsampling);
* ``shrunk_windows``: every position gets its own radius, drawn uniformly from 1..window (near words count more);
* ``skipgram_pairs`` / ``cbow_examples``: the (input, target) examples the two architectures learn from;
* ``noise_distribution``: negative words are drawn from the unigram distribution raised to 3/4;
* ``negative_sampling_loss``: logistic regression of real (input, target) pairs against noise words.

Training is SGD on batches of examples, with the C code's learning rate that falls linearly to almost zero. Two
ways to take a step give the same vectors: ``Word2VecModel.forward`` is the loss, for ``loss.backward()`` and an
optimizer (the plain path); ``Word2VecModel.sgd_step`` writes its gradient out and adds it to the rows the batch
touches, which is what the C code's inner loop does pair by pair (the fast path; on a CPU ``fused_sgd_steps`` runs
its arithmetic compiled, a chunk of batches per call, by default). Several worker
threads can share the tables without locks (Hogwild, as the C code and gensim do). ``Word2Vec`` follows gensim's
interface: the vectors it trains live apart, in ``word2bert.vectors.KeyedVectors`` (``model.wv``), as gensim
keeps them, and the word tests that score them in ``word2bert.word_tests``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import kernels
from .data import Vocab
from .device import training_threads
from .training import progress_bar
from .vectors import TrainedVectors

# --- the pieces ------------------------------------------------------------------------------------------------


def keep_probability(counts: torch.Tensor, sample: float) -> torch.Tensor:
    """Probability of keeping each occurrence of a word, the C code's subsampling formula.

    With f the word's count and t = sample * (total count): keep with (sqrt(f / t) + 1) * t / f, capped at 1; for
    a relative frequency r = f / (total count), that is sqrt(sample / r) + sample / r (the glossary's formula). The
    paper's discard probability, 1 - sqrt(sample / r), drops frequent words a little more often.
    Words rarer than about t are always kept; a word k times more frequent is kept about 1/sqrt(k) as often.
    ``sample <= 0`` keeps everything.
    """
    counts = counts.double()
    if sample <= 0:
        return torch.ones_like(counts)
    t = sample * counts.sum()
    keep = (torch.sqrt(counts / t) + 1) * t / counts  # count 0 gives inf: an unseen word is never dropped
    return keep.clamp(max=1.0).float()


def noise_distribution(counts: torch.Tensor, power: float = 0.75) -> torch.Tensor:
    """Unigram distribution raised to ``power`` (3/4 in the paper), normalised: where negative words come from."""
    weights = counts.double().pow(power) * (counts > 0)
    if weights.sum() <= 0:
        raise ValueError("the noise distribution needs at least one word with a positive count")
    return (weights / weights.sum()).float()


def alias_table(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Walker's alias table of a distribution p [V] (Vose's construction): draws in O(1), exactly, for the noise.

    Slot i keeps word i with probability ``keep[i]`` and gives its other ``1 - keep[i]`` to ``alias[i]``; every slot
    carries 1/V of the mass. (The C code fills a table of 10^8 slots; gensim searches the cumulative sum.)
    """
    scaled = (p.double() * len(p) / p.double().sum()).tolist()
    keep, alias = [1.0] * len(p), list(range(len(p)))
    small = [i for i, x in enumerate(scaled) if x < 1]
    large = [i for i, x in enumerate(scaled) if x >= 1]
    while small and large:
        s, g = small.pop(), large.pop()
        keep[s], alias[s] = scaled[s], g
        scaled[g] -= 1 - scaled[s]
        (small if scaled[g] < 1 else large).append(g)
    return torch.tensor(keep, dtype=torch.float32), torch.tensor(alias, dtype=torch.long)


def sample_noise(
    table: tuple[torch.Tensor, torch.Tensor], shape: tuple[int, ...], generator: torch.Generator
) -> torch.Tensor:
    """Noise word ids of the given shape from an ``alias_table``: a slot uniformly, then the slot's word or alias."""
    keep, alias = table
    slot = torch.randint(len(keep), shape, generator=generator, device=generator.device).to(keep.device)
    u = torch.rand(shape, generator=generator, device=generator.device).to(keep.device)
    flat = slot.view(-1)  # index_select: the same rows as keep[slot], at half the time
    return torch.where(u < keep.index_select(0, flat).view(shape), slot, alias.index_select(0, flat).view(shape))


def shrunk_windows(
    sentence: torch.Tensor, window: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Context positions of every position of a flat corpus, with a radius drawn per position (dynamic window).

    sentence: [N], the sentence each position belongs to (windows never cross sentences). Each position draws a
    radius b uniformly from 1..window, as the C code does; its contexts are the positions within b in the same
    sentence. Returns positions [N, 2 * window] and which of them are contexts [N, 2 * window] (bool).
    """
    n, device = len(sentence), sentence.device
    offsets = torch.cat([torch.arange(-window, 0), torch.arange(1, window + 1)]).to(device)
    radius = torch.randint(1, window + 1, (n,), generator=generator, device=generator.device).to(device)
    positions = torch.arange(n, device=device)[:, None] + offsets
    valid = (positions >= 0) & (positions < n) & (offsets.abs() <= radius[:, None])
    positions = positions.clamp(0, max(n - 1, 0))
    valid &= sentence[positions] == sentence[:, None]
    return positions, valid


def skipgram_pairs(
    ids: torch.Tensor, sentence: torch.Tensor, window: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Skip-gram's (center, context) word-id pairs of a flat corpus ``ids`` [N] with a shrunk window each."""
    positions, valid = shrunk_windows(sentence, window, generator)
    return ids[:, None].expand_as(positions)[valid], ids[positions][valid]


def cbow_examples(
    ids: torch.Tensor, sentence: torch.Tensor, window: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CBOW's examples: (context ids [M, 2 * window], which are real [M, 2 * window], center ids [M]).

    Positions without any context (one-word sentences) give no example.
    """
    positions, valid = shrunk_windows(sentence, window, generator)
    has_context = valid.any(1)
    return ids[positions][has_context], valid[has_context], ids[has_context]


def negative_sampling_loss(
    hidden: torch.Tensor, target: torch.Tensor, noise: torch.Tensor, noise_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """-log σ(h·v'_target) - Σ_k log σ(-h·v'_noise_k), summed over the batch.

    hidden: [B, D] input-side vectors, target: [B, D] and noise: [B, K, D] output-side vectors; noise_mask [B, K]
    zeroes noise words that equal the target (the C code skips those). Summed, not averaged: the C code updates
    after every pair, so a batch's gradient is the sum of its pairs' gradients.
    """
    real = F.logsigmoid((hidden * target).sum(-1))
    fake = F.logsigmoid(-torch.einsum("bd,bkd->bk", hidden, noise))
    if noise_mask is not None:
        fake = fake * noise_mask
    return -(real + fake.sum(-1)).sum()


def linear_learning_rate(alpha: float, min_alpha: float, progress: float) -> float:
    """The learning rate falls linearly from ``alpha`` to ``min_alpha`` over training (progress in [0, 1])."""
    return alpha - (alpha - min_alpha) * min(max(progress, 0.0), 1.0)


def encode_corpus(sentences: Iterable[Sequence[str]], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Flatten sentences into word ids [N] and sentence numbers [N]; words outside ``vocab`` are left out, as the
    C code and gensim leave out words below min_count."""
    ids, sentence = [], []
    for k, tokens in enumerate(sentences):
        row = [vocab.stoi[w] for w in tokens if w in vocab.stoi]
        ids += row
        sentence += [k] * len(row)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(sentence, dtype=torch.long)


# --- the model -------------------------------------------------------------------------------------------------


@dataclass
class Word2VecConfig:
    """The settings of a trained ``Word2Vec``, as its checkpoint stores them; their defaults are ``Word2Vec``'s."""

    vector_size: int
    window: int  # largest radius; each position draws its own from 1..window
    negative: int  # noise words per real pair
    sg: int  # 1: skip-gram, 0: CBOW
    min_count: int
    sample: float  # subsampling threshold
    epochs: int
    alpha: float  # initial learning rate
    min_alpha: float  # final learning rate
    batch_size: int  # examples per SGD step
    seed: int


class Word2VecModel(nn.Module):
    """Two tables: input vectors (the C code's syn0, the word vectors we keep) and output vectors (syn1neg)."""

    def __init__(self, vocab_size: int, vector_size: int):
        super().__init__()
        self.input_vectors = nn.Embedding(vocab_size, vector_size, sparse=True)
        self.output_vectors = nn.Embedding(vocab_size, vector_size, sparse=True)
        # input vectors uniform in ±1/dim as gensim (the C code: ±0.5/dim), output vectors zero. The start's scale
        # matters when words are rare and epochs few: the output vectors' first steps are proportional to it
        # (benchmarks/README.md: with the C code's range, 12 points behind gensim on rare-word analogies)
        nn.init.uniform_(self.input_vectors.weight, -1 / vector_size, 1 / vector_size)
        nn.init.zeros_(self.output_vectors.weight)

    def forward(
        self, inputs: torch.Tensor, targets: torch.Tensor, noise: torch.Tensor, input_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Summed loss. inputs: [B] center words (skip-gram) or [B, C] context words with input_mask (CBOW,
        whose input is the mean of the context vectors). targets: [B]; noise: [B, K]."""
        hidden = self.input_vectors(inputs)
        if input_mask is not None:
            mask = input_mask.unsqueeze(-1).to(hidden.dtype)
            summed, count = (hidden * mask).sum(1), mask.sum(1)
            # as the C code and gensim: the mean goes forward, but every context word gets the full error back
            hidden = summed / count + (summed - summed.detach()) * (1 - 1 / count)
        return negative_sampling_loss(
            hidden, self.output_vectors(targets), self.output_vectors(noise), noise != targets[:, None]
        )

    @torch.no_grad()
    def sgd_step(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        noise: torch.Tensor,
        input_mask: torch.Tensor | None,
        lr: float,
    ) -> float:
        """``forward``, ``backward`` and an SGD step of ``lr`` with the gradient written out; returns the loss.

        With s_j = h·v'_j for the target (j = 0, label 1) and the noise words (label 0), the loss's gradient is
        -(label_j - σ(s_j)) v'_j for h and -(label_j - σ(s_j)) h for v'_j: each output row moves by
        lr (label_j - σ(s_j)) h, the input side by the sum of lr (label_j - σ(s_j)) v'_j. Rows a batch touches
        several times get the sum, as the sparse gradient does.
        """
        syn0, syn1 = self.input_vectors.weight, self.output_vectors.weight
        if input_mask is None:  # skip-gram: h is the center's vector
            rows = inputs
            hidden = F.embedding(rows, syn0)  # [B, D]
        else:  # CBOW: h is the mean of the context's vectors, one bag per example
            rows, counts = inputs[input_mask], input_mask.sum(1)
            hidden = F.embedding_bag(rows, syn0, torch.cumsum(counts, 0) - counts, mode="mean")
        outputs = torch.cat([targets[:, None], noise], 1)  # [B, 1 + K]: the target, then the noise words
        # one [B, 1 + K, D] tensor serves in turn as the output rows, their products with h and the output rows'
        # steps: a fresh tensor for each costs about a third more time (it leaves the cache)
        products = F.embedding(outputs, syn1).mul_(hidden.unsqueeze(1))
        scores = products.sum(-1)  # s_j = h·v'_j
        used = torch.cat([torch.ones_like(targets[:, None], dtype=torch.bool), noise != targets[:, None]], 1)
        loss = -(F.logsigmoid(scores[:, 0]).sum() + (F.logsigmoid(-scores[:, 1:]) * used[:, 1:]).sum())
        error = torch.sigmoid(scores).neg_()  # label - σ(s), times lr
        error[:, 0] += 1
        error.mul_(used).mul_(lr)
        # Σ_j error_j v'_j [B, D], from the output rows as they were before this step moves them
        back = F.embedding_bag(outputs, syn1, mode="sum", per_sample_weights=error)
        steps = torch.mul(error.unsqueeze(2), hidden.unsqueeze(1), out=products)  # error_j h, [B, 1 + K, D]
        syn1.index_add_(0, outputs.view(-1), steps.flatten(0, 1))
        # every context word of a CBOW example gets the example's full step, as in the C code
        syn0.index_add_(0, rows, back if input_mask is None else back.repeat_interleave(counts, 0))
        return loss.item()

    @torch.no_grad()
    def fused_sgd_steps(
        self,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        noise: torch.Tensor,
        input_mask: torch.Tensor | None,
        lrs: Sequence[float],
        batch_size: int,
    ) -> float:
        """``sgd_step`` on each batch of ``batch_size`` examples in turn, batch i with learning rate ``lrs[i]``, as
        one compiled CPU kernel (``word2bert.kernels``): the same steps, the same vectors to float rounding, and no
        return to Python between batches. Returns the summed loss. Needs ``kernels.word2vec_step()``, which is None
        where it cannot be built."""
        kernel = kernels.word2vec_step()
        syn0, syn1 = self.input_vectors.weight, self.output_vectors.weight
        outputs = torch.cat([targets[:, None], noise], 1)
        lrs = torch.tensor(lrs, dtype=torch.float64)
        if input_mask is None:
            return kernel(syn0, syn1, inputs, None, outputs, lrs, batch_size)
        offsets = F.pad(input_mask.sum(1).cumsum(0), (1, 0))  # CBOW: example b's context is rows offsets[b]:[b + 1]
        return kernel(syn0, syn1, inputs[input_mask], offsets, outputs, lrs, batch_size)


class Word2Vec(TrainedVectors):
    """Train word vectors on an iterable of token lists, with gensim's arguments and attributes.

    ``model.wv`` holds the vectors, ``model.loss_history`` the mean loss per example along training (one value
    per chunk of about 50k words), ``model.embed_sentence(tokens)`` gives [1, len(tokens), vector_size].
    ``workers`` threads train at once on a CPU, as gensim's do. The default is one (gensim's is three): only one
    worker gives the same vectors on every run, which a course wants, and on a vocabulary of a few hundred words
    (the toy world), where every batch updates the same rows, threads cost CBOW some neighbour purity.
    On a CPU a chunk's steps run in one call of ``fused_sgd_steps``, ``sgd_step``'s arithmetic compiled into one
    kernel (where a C++ compiler can build it: ``word2bert.kernels``); ``fused=False`` runs ``sgd_step`` itself,
    the torch code the book shows, and ``autograd=True`` takes each step with ``loss.backward()`` and
    ``torch.optim.SGD``: all three give the same vectors, to float rounding. With one worker on a CPU, training runs
    on ``threads`` torch threads, by default one per idle core (``word2bert.device.cpu_threads``).
    """

    config_class = Word2VecConfig
    chunk_words = 50_000  # pairs are built and shuffled per chunk of this many corpus words

    def __init__(
        self,
        sentences: Iterable[Sequence[str]] | None = None,
        vector_size: int = 100,
        window: int = 5,
        negative: int = 5,
        sg: int = 1,
        min_count: int = 5,
        sample: float = 1e-3,
        epochs: int = 5,
        alpha: float = 0.025,
        seed: int = 0,
        device: str | torch.device | None = None,
        workers: int = 1,
        *,
        min_alpha: float = 1e-4,
        batch_size: int = 1024,
        progress: bool = True,
        autograd: bool = False,
        fused: bool = True,
        threads: int | None = None,
    ):
        config = Word2VecConfig(
            vector_size=vector_size,
            window=window,
            negative=negative,
            sg=sg,
            min_count=min_count,
            sample=sample,
            epochs=epochs,
            alpha=alpha,
            min_alpha=min_alpha,
            batch_size=batch_size,
            seed=seed,
        )
        super().__init__(
            config,
            sentences,
            device,
            workers=workers,
            progress=progress,
            autograd=autograd,
            fused=fused,
            threads=threads,
        )

    @staticmethod
    def build_model(config: Word2VecConfig, vocab_size: int) -> Word2VecModel:
        return Word2VecModel(vocab_size, config.vector_size)

    def word_vectors(self) -> torch.Tensor:
        return self.model.input_vectors.weight

    def train(
        self,
        sentences: Sequence[Sequence[str]],
        workers: int = 1,
        progress: bool = True,
        autograd: bool = False,
        fused: bool = True,
        threads: int | None = None,
    ) -> None:
        cfg, device = self.config, self.device
        fused = fused and not autograd and device.type == "cpu" and kernels.word2vec_step() is not None
        ids, sentence = encode_corpus(sentences, self.vocab)
        counts = torch.tensor(self.vocab.counts, dtype=torch.float64)
        keep = keep_probability(counts, cfg.sample).to(device)
        noise = tuple(t.to(device) for t in alias_table(noise_distribution(counts)))
        chunks = [(s, min(s + self.chunk_words, len(ids))) for s in range(0, len(ids), self.chunk_words)]
        jobs, shuffle = [], random.Random(cfg.seed)
        for _ in range(cfg.epochs):
            jobs += chunks
            shuffle.shuffle(chunks)  # a new chunk order each epoch; pairs inside a chunk are shuffled anyway
        total, lock = cfg.epochs * len(ids), threading.Lock()
        done = [0.0]  # corpus words trained on, by all workers: the learning rate falls with it

        def work(worker: int, bar) -> None:
            generator = torch.Generator(device=device).manual_seed(cfg.seed + 1_000_003 * worker)
            optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.alpha) if autograd else None
            while True:
                with lock:
                    if not jobs:
                        return
                    start, end = jobs.pop(0)
                chunk_ids, chunk_sentence = ids[start:end].to(device), sentence[start:end].to(device)
                kept = torch.rand(len(chunk_ids), generator=generator, device=device) < keep[chunk_ids]
                examples = self._examples(chunk_ids[kept], chunk_sentence[kept], generator)
                n = len(examples[-1])
                order = torch.randperm(n, generator=generator, device=device)
                examples = [None if t is None else t.index_select(0, order) for t in examples]
                examples.append(sample_noise(noise, (n, cfg.negative), generator))
                # the rate falls with the corpus words trained on, by all workers: each batch of the chunk counts
                # for its share of the chunk's words (gensim, too, sets it per job)
                first, step_words = done[0], (end - start) / max(n, 1)
                lrs = [
                    linear_learning_rate(cfg.alpha, cfg.min_alpha, (first + step_words * b) / total)
                    for b in range(0, n, cfg.batch_size)
                ]
                if fused:  # every batch of the chunk in one call of the compiled kernel
                    inputs, mask, targets, negatives = examples
                    loss_sum = self.model.fused_sgd_steps(inputs, targets, negatives, mask, lrs, cfg.batch_size)
                else:
                    loss_sum = 0.0
                    for lr, b in zip(lrs, range(0, n, cfg.batch_size)):
                        inputs, mask, targets, negatives = (
                            None if t is None else t[b : b + cfg.batch_size] for t in examples
                        )
                        if autograd:
                            for group in optimizer.param_groups:
                                group["lr"] = lr
                            loss = self.model(inputs, targets, negatives, mask)
                            optimizer.zero_grad(set_to_none=True)
                            loss.backward()
                            optimizer.step()
                            loss_sum += loss.item()
                        else:
                            loss_sum += self.model.sgd_step(inputs, targets, negatives, mask, lr)
                with lock:
                    done[0] += end - start
                    self.loss_history.append(loss_sum / max(n, 1))
                    bar.update(end - start)
                    rate = lrs[-1] if lrs else linear_learning_rate(cfg.alpha, cfg.min_alpha, first / total)
                    bar.set_postfix(loss=f"{self.loss_history[-1]:.3f}", lr=f"{rate:.4f}")

        workers = max(1, workers) if device.type == "cpu" else 1  # threads share one GPU no faster
        # one worker: torch's threads, one per idle core; several: one thread each, the workers are the parallelism
        with (
            training_threads(device, threads if workers == 1 else 1),
            progress_bar(total=total, desc="word2vec", unit="word", show=progress) as bar,
        ):
            if workers == 1:
                work(0, bar)
            else:
                with ThreadPoolExecutor(workers) as pool:
                    for future in [pool.submit(work, k, bar) for k in range(workers)]:
                        future.result()
        self._wv = None

    def _examples(self, ids: torch.Tensor, sentence: torch.Tensor, generator: torch.Generator):
        """(inputs, input mask or None, targets) of one chunk: skip-gram predicts each context from the center,
        CBOW predicts the center from the mean of its context."""
        if self.config.sg:
            centers, contexts = skipgram_pairs(ids, sentence, self.config.window, generator)
            return centers, None, contexts
        return cbow_examples(ids, sentence, self.config.window, generator)
