"""`tools/prose_stats.py`, the book's prose counter (issue 51): what counts as prose, where a sentence ends, and the
limits it checks."""

from __future__ import annotations

import importlib.util
import json
import sys

from helpers import ROOT


def tool():
    spec = importlib.util.spec_from_file_location("word2bert_prose_stats", ROOT / "tools" / "prose_stats.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


PAGE = """# A title that is not prose

The first sentence has six words. A second one follows, e.g. with an abbreviation, and a role {glue:text}`x:.2f`
in it {cite:p}`devlin2019bert`!

| a | table |
|---|---|
| is | not prose |

```python
code = "is not prose either. Not at all."
```

* A list item ends a sentence
* and so does the next (*same sense?* yes), with [a link](https://example.org) in it.

:::{figure} images/x.svg
:alt: An alt text is an option, not prose.

A caption is prose.
:::

```{glossary}
term
  A definition is prose.
```
"""


def test_prose_is_paragraphs_and_list_items_and_sentences_end_where_a_reader_stops(tmp_path):
    prose = tool()
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    stats = prose.page_stats(page)
    assert stats.sentences == [
        "The first sentence has six words.",
        "A second one follows, e.g. with an abbreviation, and a role X in it !",
        "A list item ends a sentence",
        "and so does the next (*same sense?* yes), with a link in it.",
        "A caption is prose.",
        "A definition is prose.",
    ]
    assert stats.words == 6 + 14 + 6 + 13 + 4 + 4
    assert stats.long == [] and stats.long_share == 0.0


def test_a_notebooks_prose_is_its_markdown_cells_and_the_limits_are_checked(tmp_path):
    prose = tool()
    long = " ".join(["word"] * 41) + "."
    cells = [
        {"cell_type": "markdown", "source": [long, " Short one."], "metadata": {}},
        {"cell_type": "code", "source": ["print('not prose. Never.')"], "metadata": {}, "outputs": []},
    ]
    page = tmp_path / "page.ipynb"
    page.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    stats = prose.page_stats(page)
    assert len(stats.sentences) == 2 and stats.long == [long] and stats.long_share == 0.5 and stats.longest == 41
    assert prose.main([str(page), "--check"]) == 1
    assert prose.main([str(page)]) == 0
