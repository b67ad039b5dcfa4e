"""The trusted side of a sandbox: the tests' proxies of what the student defined, and the grading of one submission."""
