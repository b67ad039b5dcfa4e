"""Scripts that train the course's committed checkpoints: ``python -m word2bert.scripts.<name> --help``."""
