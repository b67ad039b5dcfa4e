"""A recipe's fields as command-line options: ``--vocab-size 8000`` sets ``vocab_size``, each with its default and
help from the field (``option``). ``parse`` is what a script in ``word2bert.scripts`` does; ``command`` writes the
options back, the command line that makes a recipe, for its model card or results."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import types
import typing
from typing import Any, TypeVar

R = TypeVar("R")


def option(default: Any, help: str, **argparse_options: Any) -> Any:
    """A recipe's field with what ``--its-name`` says on the command line; a list default is copied per recipe."""
    metadata = {"help": help, **argparse_options}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _options(recipe: type) -> list[tuple[dataclasses.Field, type, Any]]:
    """(field, its type without None, its default) of every option, a nested recipe's fields in its place."""
    hints, found = typing.get_type_hints(recipe), []
    for f in dataclasses.fields(recipe):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(hints[f.name]):
            found += [(g, kind, getattr(default, g.name)) for g, kind, _ in _options(hints[f.name])]
        else:
            kinds = [k for k in typing.get_args(hints[f.name]) if k is not type(None)]
            is_optional = typing.get_origin(hints[f.name]) in (typing.Union, types.UnionType)
            found.append((f, kinds[0] if is_optional else hints[f.name], default))
    return found


def parser(recipe: type, description: str | None = None) -> argparse.ArgumentParser:
    """The command line of ``recipe``: ``--name`` for each field (``--no-name`` for one that is True unless told)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f, kind, default in _options(recipe):
        flag, extra = "--" + f.name.replace("_", "-"), dict(f.metadata)
        if kind is bool:
            flag = flag if not default else "--no-" + flag[2:]
            p.add_argument(flag, dest=f.name, action="store_false" if default else "store_true", **extra)
        elif typing.get_origin(kind) is list:
            (item,) = typing.get_args(kind)
            p.add_argument(flag, type=item, nargs="*", default=list(default), **extra)
        else:
            p.add_argument(flag, type=kind, default=default, **extra)
    return p


def parse(recipe: type[R], argv: list[str] | None = None, description: str | None = None) -> R:
    """The recipe that ``argv`` (the command line's arguments unless given) asks for."""
    return _build(recipe, vars(parser(recipe, description).parse_args(argv)))


def _build(recipe: type[R], values: dict[str, Any]) -> R:
    hints = typing.get_type_hints(recipe)
    return recipe(
        **{
            f.name: _build(hints[f.name], values) if dataclasses.is_dataclass(hints[f.name]) else values[f.name]
            for f in dataclasses.fields(recipe)
        }
    )


def arguments(recipe: Any) -> list[str]:
    """The options that make ``recipe`` from the defaults of its class, in the order of its fields."""
    defaults, argv = _options(type(recipe)), []
    values = dict(_values(recipe))
    for f, kind, default in defaults:
        value = values[f.name]
        if value == default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if kind is bool:
            argv.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            argv += [flag, *map(_text, value)]
        else:
            argv += [flag, _text(value)]
    return argv


def _text(value: Any) -> str:
    """A value as one would type it: ``5`` for 5.0, ``0.001`` for 1e-3."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _values(recipe: Any) -> list[tuple[str, Any]]:
    found = []
    for f in dataclasses.fields(recipe):
        value = getattr(recipe, f.name)
        found += _values(value) if dataclasses.is_dataclass(value) else [(f.name, value)]
    return found


def command(script: str, recipe: Any, world_size: int = 1) -> str:
    """The command line that makes ``recipe``: ``python -m script`` (``torchrun`` on ``world_size`` processes) and
    the options that differ from the defaults."""
    launcher = f"torchrun --nproc_per_node {world_size}" if world_size > 1 else "python"
    return " ".join([launcher, "-m", script, *map(shlex.quote, arguments(recipe))])
