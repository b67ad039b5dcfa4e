"""What goes out: the gradebook, feedback, grades.csv and the summary, exports, similarity. Every HTML page is a
Jinja2 template in ``templates/`` with autoescape; only cleaned HTML and rendered markdown come in marked safe."""

from pathlib import Path

import jinja2

_TEMPLATES = jinja2.FileSystemLoader(Path(__file__).parent / "templates")
_PAGES = jinja2.Environment(loader=_TEMPLATES, autoescape=True, undefined=jinja2.StrictUndefined)
