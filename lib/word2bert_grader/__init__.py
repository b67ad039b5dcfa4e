"""word2bert_grader: the instructors' grading pipeline of the word2bert course (not part of the
library students install).

Scores come from a process that never runs student code. Each submission's code runs in a
bubblewrap sandbox (:mod:`.sandbox`, :mod:`.runner`); the tests run in the grader's own process and
reach the student's functions and classes only through a data-only channel (:mod:`.wire`,
:mod:`.proxy`, :mod:`.mirror`); :mod:`.harness` grades one submission (:mod:`.task`: a ``Submission`` in, a
``Result`` out) as a pure task, :mod:`.pipeline` grades a class
and alone writes the gradebook (:mod:`.gradebook`), ``grades.csv`` and the feedback (:mod:`.feedback`).
:mod:`.downloads` collects submissions downloaded from a learning-management system.
"""
