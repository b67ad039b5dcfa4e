"""The old name of :mod:`word2bert.word_tests` (chapter 1's word tests), kept so that ``from word2bert import
evaluation`` and ``from word2bert.evaluation import ...`` still work: both give that module itself."""

import sys

from . import word_tests

sys.modules[__name__] = word_tests
