"""BERT's pre-training data (Devlin et al. 2019, section 3.1 and appendix A): masking, sentence pairs, batches.

Masked language modelling (MLM): 15% of the pieces are chosen; 80% of those become [MASK], 10% a random piece, 10%
stay as they are, and the model predicts the original of each chosen piece. The sentence task beside it is an object
(``SentenceObjective``): BERT's next-sentence prediction (``NSP``: is B the text that followed A, or from another
document?), ALBERT's sentence-order prediction (``SOP``: A and B swapped as negatives) and RoBERTa's MLM alone
(``MLM_ONLY``).

Instances are built as the reference implementation's ``create_pretraining_data.py`` builds them: segments of
several sentences up to a target length, a random B from another document half of the time (the sentences that
B would have used are put back), and ``truncate_seq_pair`` trimming the longer segment at a random end. As in
RoBERTa, masks are drawn afresh every time a batch is made (dynamic masking, ``PretrainingCollator``), so each
epoch sees new ones. The loop that trains on them is :mod:`word2bert.pretraining`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from .wordpiece import PREFIX, WordPieceTokenizer, build_pair_input, truncate_seq_pair

IS_NEXT, NOT_NEXT = 0, 1
MLM_PROBABILITY = 0.15  # BERT's share of the pieces chosen for prediction

# --- masked language modelling ---------------------------------------------------------------------------------


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor,
    *,
    vocab_size: int,
    mask_token_id: int,
    mlm_probability: float = MLM_PROBABILITY,
    generator: torch.Generator | None = None,
    word_starts: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking of a batch [B, T]: returns new ``(corrupted_ids, labels)``; ``input_ids`` is untouched.

    Each position that is not special is chosen with probability ``mlm_probability``; labels hold the original
    id there and -100 elsewhere. A chosen position becomes [MASK] (80%), a uniformly random id (10%) or stays
    (10%). With ``word_starts`` (True at the first piece of every word, and at special tokens) whole words are
    chosen: every piece takes the draw of its word's first piece (whole-word masking, BERT's 2019 update).
    All randomness comes from ``generator`` (drawn on its device, so a seed gives the same masks anywhere).
    """
    gen_device = generator.device if generator is not None else torch.device("cpu")
    shape = input_ids.shape

    def coin(p: float) -> torch.Tensor:
        return torch.bernoulli(torch.full(shape, p, device=gen_device), generator=generator).bool()

    chosen = coin(mlm_probability)
    if word_starts is not None:
        positions = torch.arange(shape[-1], device=gen_device).expand(shape)
        start_of_word = torch.where(word_starts.to(gen_device), positions, 0).cummax(dim=-1).values
        chosen = chosen.gather(-1, start_of_word)
    chosen = chosen.to(input_ids.device) & ~special_tokens_mask.bool()
    to_mask = coin(0.8).to(input_ids.device) & chosen
    to_random = coin(0.5).to(input_ids.device) & chosen & ~to_mask  # half of the remaining 20%
    random_ids = torch.randint(vocab_size, shape, generator=generator, device=gen_device).to(input_ids.device)

    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, -100))
    corrupted = torch.where(to_mask, torch.full_like(input_ids, mask_token_id), input_ids)
    corrupted = torch.where(to_random, random_ids, corrupted)
    return corrupted, labels


# --- next-sentence prediction ----------------------------------------------------------------------------------


@dataclass
class PretrainingInstance:
    """One sentence-pair example before masking: segment A, segment B (lists of piece ids) and whether the pair is
    a negative of the sentence objective (for NSP, B from another document; for SOP, A and B swapped)."""

    tokens_a: list[int]
    tokens_b: list[int]
    is_random_next: bool  # BERT's name for any negative pair: NSP's random B, or SOP's swap of A and B

    @property
    def next_sentence_label(self) -> int:
        return NOT_NEXT if self.is_random_next else IS_NEXT


class SentenceObjective:
    """The sentence-level task beside MLM, learnt by the classifier on [CLS] (``BertForPreTraining.nsp``): which
    pairs it must tell from a true continuation. ``NSP``, ``SOP`` and ``MLM_ONLY`` are the three there are.

    ``pair`` turns a chunk of consecutive sentences, cut after sentence ``a_end``, into ``(A, B, is_negative,
    sentences used)``; the chunk's unused sentences go back for the next instance.
    """

    name = ""  # as the book's tables print it
    task = ""  # the classifier's task, as its accuracy is printed
    trained = True  # whether the classifier's cross-entropy is added to MLM's
    needs_other_documents = False  # whether B may come from another document

    def pair(self, chunk, a_end, documents, document_index, target_length, rng) -> tuple[list, list, bool, int]:
        raise NotImplementedError

    @staticmethod
    def contiguous(chunk, a_end, rng) -> tuple[list, list]:
        """A and B, the chunk before and after the cut; a one-sentence chunk is cut inside its sentence."""
        if len(chunk) == 1 and len(chunk[0]) >= 2:
            cut = rng.randint(1, len(chunk[0]) - 1)
            return list(chunk[0][:cut]), list(chunk[0][cut:])
        return [t for s in chunk[:a_end] for t in s], [t for s in chunk[a_end:] for t in s]

    def __repr__(self) -> str:
        return self.name


class NextSentencePrediction(SentenceObjective):
    """BERT's NSP: half of the time (always for a one-sentence chunk) B is taken from a random *other* document,
    from a random sentence on, up to the target length; the chunk's sentences after A are put back."""

    name, task = "MLM + NSP", "NSP"
    needs_other_documents = True

    def pair(self, chunk, a_end, documents, document_index, target_length, rng):
        tokens_a = [t for s in chunk[:a_end] for t in s]
        if len(chunk) == 1 or rng.random() < 0.5:
            tokens_b: list[int] = []
            other = rng.randrange(len(documents) - 1)
            other += other >= document_index  # uniform over the other documents, never this one
            random_document = documents[other]
            for sentence in random_document[rng.randrange(len(random_document)) :]:
                tokens_b += sentence
                if len(tokens_b) >= target_length - len(tokens_a):
                    break
            return tokens_a, tokens_b, True, a_end
        return tokens_a, [t for s in chunk[a_end:] for t in s], False, len(chunk)


class SentenceOrderPrediction(SentenceObjective):
    """ALBERT's SOP (Lan et al. 2020, section 4.2): A and B are always consecutive text of one document, and half
    of the time they are swapped. Topic gives nothing away, so only coherence and order can. (ALBERT's script
    falls back to another document for a one-sentence chunk; here it is cut inside its sentence, so that every
    negative is a swap.)"""

    name, task = "MLM + SOP", "SOP"

    def pair(self, chunk, a_end, documents, document_index, target_length, rng):
        tokens_a, tokens_b = self.contiguous(chunk, a_end, rng)
        if rng.random() < 0.5:
            return tokens_b, tokens_a, True, len(chunk)
        return tokens_a, tokens_b, False, len(chunk)


class MaskedLMOnly(SentenceObjective):
    """No sentence-level task, as RoBERTa (Liu et al. 2019): the same [CLS] A [SEP] B [SEP] inputs, always
    consecutive text, and the loss is MLM's alone (the [CLS] classifier is left untrained)."""

    name, task = "MLM alone", "[CLS] head (untrained)"
    trained = False

    def pair(self, chunk, a_end, documents, document_index, target_length, rng):
        return *self.contiguous(chunk, a_end, rng), False, len(chunk)


NSP, SOP, MLM_ONLY = NextSentencePrediction(), SentenceOrderPrediction(), MaskedLMOnly()


def create_instances_from_document(
    documents: Sequence[Sequence[Sequence[int]]],
    document_index: int,
    max_seq_length: int,
    rng: random.Random,
    short_seq_prob: float = 0.1,
    objective: SentenceObjective = NSP,
) -> list[PretrainingInstance]:
    """Sentence-pair instances from one document, as the reference ``create_instances_from_document``.

    Sentences are gathered into a chunk until it reaches a target length (``max_seq_length - 3``, or with
    probability ``short_seq_prob`` a shorter random one, so fine-tuning's short inputs are not new). A random
    split of the chunk gives A, and ``objective`` makes B (for NSP: the rest of the chunk, or half of the time
    sentences from a random *other* document, in which case the chunk's unused sentences are put back).
    ``documents`` hold non-empty sentences of piece ids; NSP needs at least two documents.
    """
    if objective.needs_other_documents and len(documents) < 2:
        raise ValueError("next-sentence prediction needs at least two documents (B may come from another one)")
    document = documents[document_index]
    max_num_tokens = max_seq_length - 3  # [CLS], [SEP], [SEP]
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances: list[PretrainingInstance] = []
    chunk: list[Sequence[int]] = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a, tokens_b, negative, used = objective.pair(
                chunk, a_end, documents, document_index, target_seq_length, rng
            )
            i -= len(chunk) - used  # put the unused sentences back
            tokens_a, tokens_b = truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append(PretrainingInstance(tokens_a, tokens_b, negative))
            chunk, chunk_length = [], 0
        i += 1
    return instances


def create_pretraining_instances(
    documents: Sequence[Sequence[Sequence[int]]],
    max_seq_length: int,
    seed: int = 0,
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    objective: SentenceObjective = NSP,
) -> list[PretrainingInstance]:
    """Instances of ``objective`` from every document (``dupe_factor`` passes with different splits), shuffled
    with ``seed``.

    Empty sentences and documents are dropped first. On short documents like ours the reference procedure makes
    more NotNext than IsNext instances (one-sentence chunks are always NotNext, and the sentences put back after a
    NotNext make further instances): 58-62% NotNext. The surplus of the larger class is dropped at random, so
    NSP's labels are balanced and always guessing NotNext scores 50% (SOP's, nearly balanced already, too).
    """
    docs = [[list(s) for s in d if len(s)] for d in documents]
    docs = [d for d in docs if d]
    rng = random.Random(seed)
    instances = [
        instance
        for _ in range(dupe_factor)
        for index in range(len(docs))
        for instance in create_instances_from_document(docs, index, max_seq_length, rng, short_seq_prob, objective)
    ]
    if not objective.trained:
        rng.shuffle(instances)
        return instances
    by_label = [[x for x in instances if not x.is_random_next], [x for x in instances if x.is_random_next]]
    n = min(map(len, by_label))
    instances = [x for group in by_label for x in rng.sample(group, n)]
    rng.shuffle(instances)
    return instances


def tokenize_documents(
    tokenizer: WordPieceTokenizer, documents: Sequence[Sequence[Sequence[str]]]
) -> list[list[list[int]]]:
    """Documents of word lists -> documents of piece-id lists (no [CLS]/[SEP])."""
    return [[tokenizer.encode_words(s).input_ids[1:-1] for s in doc] for doc in documents]


# --- dataset and collate ---------------------------------------------------------------------------------------


class PretrainingDataset(Dataset):
    """The NSP instances; masking happens in ``PretrainingCollator``, anew for every batch."""

    def __init__(self, instances: Sequence[PretrainingInstance]):
        self.instances = list(instances)

    def __len__(self) -> int:
        return len(self.instances)

    def __getitem__(self, index: int) -> PretrainingInstance:
        return self.instances[index]


class PretrainingCollator:
    """Pads a list of instances into a batch and masks it with its own generator (dynamic masking).

    Returns input_ids, token_type_ids, attention_mask, labels (MLM, -100 where nothing is predicted) and
    next_sentence_label, each a tensor with the batch first.
    """

    def __init__(
        self,
        tokenizer: WordPieceTokenizer,
        mlm_probability: float = MLM_PROBABILITY,
        whole_word_mask: bool = False,
        seed: int = 0,
    ):
        self.tokenizer, self.mlm_probability, self.whole_word_mask = tokenizer, mlm_probability, whole_word_mask
        self.generator = torch.Generator().manual_seed(seed)
        self.is_continuation = torch.tensor([t.startswith(PREFIX) for t in tokenizer.vocab])
        self.special_ids = torch.tensor([tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id])

    def __call__(self, instances: Sequence[PretrainingInstance]) -> dict[str, torch.Tensor]:
        tok = self.tokenizer
        pairs = [build_pair_input(x.tokens_a, x.tokens_b, cls_id=tok.cls_id, sep_id=tok.sep_id) for x in instances]
        T = max(len(ids) for ids, _ in pairs)
        input_ids = torch.full((len(pairs), T), tok.pad_id)
        token_type_ids = torch.zeros((len(pairs), T), dtype=torch.long)
        attention_mask = torch.zeros((len(pairs), T), dtype=torch.long)
        for row, (ids, types) in enumerate(pairs):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            token_type_ids[row, : len(ids)] = torch.tensor(types)
            attention_mask[row, : len(ids)] = 1
        special = torch.isin(input_ids, self.special_ids)
        word_starts = ~self.is_continuation[input_ids] if self.whole_word_mask else None
        corrupted, labels = mask_tokens(
            input_ids,
            special,
            vocab_size=tok.vocab_size,
            mask_token_id=tok.mask_id,
            mlm_probability=self.mlm_probability,
            generator=self.generator,
            word_starts=word_starts,
        )
        return {
            "input_ids": corrupted,
            "token_type_ids": token_type_ids,
            "attention_mask": attention_mask,
            "labels": labels,
            "next_sentence_label": torch.tensor([x.next_sentence_label for x in instances]),
        }
