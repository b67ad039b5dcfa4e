"""word2bert: the library behind the course "From word2vec to BERT".

One module per model (``word2vec``, ``glove``, ``elmo``, ``gpt``, ``bert``), the course's data
(``data``: the generated toy world, WordNet, vocabularies), and the measures every chapter shares
(``probes``). Every model offers ``embed_sentence(tokens) -> Tensor[layers + 1, len(tokens), dim]``.
"""

__version__ = "0.1.0"
