"""The README's Architecture section against the code: the library's floors (each module imports only modules on
floors below its own, and stands on the lowest floor that allows), no import cycle anywhere in lib/, the scripts on
top importing no other script, which of the grader's modules import the library (and that the library imports no
grader), and every module the README names for an idea of the book exists. The imports are
read with ``ast``, those inside functions too: an import that runs late is still an import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import ROOT

LIB = ROOT / "lib"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIB.glob("word2bert*/**/*.py"))}


def imports(name: str) -> set[str]:
    """The modules of lib/ that module ``name`` imports: ``from package import submodule`` names the submodule."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = ".".join(base[: len(base) - node.level + 1]) if node.level else ""
            source = ".".join(x for x in (base, node.module) if x)
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imports(name) for name in MODULES}


def cycle() -> list[str] | None:
    """One import cycle among lib/'s modules, if there is any."""
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for other in sorted(GRAPH[name]):
            if state.get(other) == "open":
                return path[path.index(other) :] + [other] if other in path else [name, other]
            if other not in state and (found := visit(other, [*path, other])):
                return found
        state[name] = "done"
        return None

    for name in MODULES:
        if name not in state and (found := visit(name, [name])):
            return found
    return None


def test_no_import_cycle_in_lib():
    found = cycle()
    assert found is None, "an import cycle: " + " -> ".join(found)


def node(module: str) -> str:
    """The README's name for a module of the library: ``bert``, or ``data/`` for every module of a subpackage
    (empty for the package itself)."""
    parts = module.split(".")
    if len(parts) == 1:
        return ""
    return parts[1] + "/" * (MODULES[f"word2bert.{parts[1]}"].name == "__init__.py")


def library_graph() -> dict[str, set[str]]:
    """What each of the README's names imports (the library's own, without the package itself)."""
    graph: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        if module.startswith("word2bert.") and node(module):
            own = graph.setdefault(node(module), set())
            own |= {node(t) for t in targets if t.startswith("word2bert.") and node(t) not in ("", node(module))}
    return graph


def computed_floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each name's floor: 0 without imports, else one above the highest it imports."""
    floors: dict[str, int | None] = {}

    def floor(name: str) -> int:
        assert floors.get(name, 0) is not None, f"{name} imports itself through others: no floor is below it"
        if name not in floors:
            floors[name] = None
            floors[name] = 1 + max((floor(t) for t in graph[name]), default=-1)
        return floors[name]

    for name in graph:
        floor(name)
    return floors


def readme_floors() -> dict[str, int]:
    """The floors of the README's diagram of lib/word2bert/: a line per floor, its number, then the names (a line
    without a number continues the floor above it), then, three spaces or more away, what they are."""
    block = re.search(r"^ lib/word2bert/ \(the library.*?\n(.*?)^\s+scripts/ \(above all", README, re.M | re.S)
    assert block, "the README's Architecture section has no diagram of lib/word2bert/'s floors"
    floors, floor = {}, None
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        names = re.split(r"\s{3,}", line.strip())[0].split()
        if names[0].isdigit():
            floor, names = int(names[0]), names[1:]
        for name in names:
            assert name not in floors, f"the README puts {name} on two floors"
            floors[name] = floor
    return floors


def test_the_readme_floors_are_the_imports():
    graph = library_graph()
    scripts = graph.pop("scripts/")
    written, computed = readme_floors(), computed_floors(graph)
    table = "\n".join(
        f"  {floor}  " + "  ".join(sorted(n for n, f in computed.items() if f == floor))
        for floor in sorted(set(computed.values()), reverse=True)
    )
    assert written == computed, f"the README's floors are not the imports'; by the imports they are:\n{table}"
    for name, targets in graph.items():
        assert all(computed[t] < computed[name] for t in targets), name
        assert "scripts/" not in targets, f"{name} imports a script: the scripts stand above the whole library"
    assert "scripts/" not in scripts


def test_no_script_imports_another():
    """A script parses its arguments and calls the library (``word2bert.recipes``); what two scripts share belongs
    in the library."""
    for module, targets in GRAPH.items():
        if module.startswith("word2bert.scripts."):
            assert not [t for t in targets if t.startswith("word2bert.scripts")], f"{module} imports a script"


def test_the_readme_names_the_grader_modules_that_import_the_library():
    """The grader imports the library on its trusted side only where the README says; the library never imports the
    grader."""
    said = re.search(r"The grader's own code imports the\s+library only in ((?:`\w+`(?:, | and )?)+)", README)
    assert said, "the README's Architecture section does not say where the grader imports the library"
    written = set(re.findall(r"`(\w+)`", said.group(1)))
    grader = {
        name.removeprefix("word2bert_grader.")
        for name, targets in GRAPH.items()
        if name.startswith("word2bert_grader.") and any(t == "word2bert" or t.startswith("word2bert.") for t in targets)
    }
    assert written == grader, (
        f"the README says {sorted(written)}; the grader's modules importing it are {sorted(grader)}"
    )
    library = [
        n
        for n, targets in GRAPH.items()
        if n.split(".")[0] == "word2bert" and any(t.split(".")[0] == "word2bert_grader" for t in targets)
    ]
    assert not library, f"library modules import the grader: {library}"


IDEAS = README[README.index("Where each idea of the book lives") : README.index("What a newcomer changes")]


@pytest.mark.parametrize("row", re.findall(r"^\| (.+?) \| (`.+`) \|$", IDEAS, re.M), ids=lambda r: r[0][:40])
def test_every_module_the_readme_names_for_an_idea_exists(row):
    idea, modules = row
    for name in re.findall(r"`([\w/]+)`", modules):
        assert f"word2bert.{name.rstrip('/')}" in MODULES, f"{idea}: the README sends it to {name}, not a module"
