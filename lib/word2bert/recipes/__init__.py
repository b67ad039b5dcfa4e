"""The recipes that made the course's checkpoints and ran its experiments: each a dataclass of its settings (the
defaults are the course's first recipe, or the committed experiment's) beside the function that runs it, such as
``bert.train(BertRecipe(...))``. ``word2bert.scripts`` are their command lines: each parses its arguments into a
recipe (``options``) and calls the run; the command that made a checkpoint is written back into its model card."""
