"""The course's data: the generated toy world, Princeton WordNet 3.0, ordinary English from Debian's packages, the
book's own plain sense sentences (and the left/right-cue ones), and whole-word vocabularies."""

from .corpus import pretraining_documents
from .cue_senses import LEFT_CUE, RIGHT_CUE, cue_sense_occurrences
from .plain_senses import MATCHED_SENTENCES, PLAIN_SENSES, SEED_SENTENCES, occurrences_of, plain_sense_occurrences
from .toyworld import Labeled, NLIPair, QAExample, SenseOccurrence, Sentence, ToyWorld
from .toyworld_grammar import NLI_LABELS, POLYSEMES, POS_TAGS
from .vocab import Vocab, tokenize
from .wordnet import WordNet, WordNetNotFound, wordnet_available

__all__ = [
    "LEFT_CUE",
    "MATCHED_SENTENCES",
    "NLI_LABELS",
    "PLAIN_SENSES",
    "POLYSEMES",
    "POS_TAGS",
    "RIGHT_CUE",
    "SEED_SENTENCES",
    "Labeled",
    "NLIPair",
    "QAExample",
    "SenseOccurrence",
    "Sentence",
    "ToyWorld",
    "Vocab",
    "WordNet",
    "WordNetNotFound",
    "cue_sense_occurrences",
    "occurrences_of",
    "plain_sense_occurrences",
    "pretraining_documents",
    "tokenize",
    "wordnet_available",
]
