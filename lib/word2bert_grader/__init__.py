"""The instructors' grading pipeline of the word2bert course: README.md says whom it trusts and how it is built."""
