"""word2bert_grader: the instructors' grading pipeline of the word2bert course (not in the library students install).

Scores come from a process that never runs student code: README.md says whom it trusts and what each part
guarantees."""
