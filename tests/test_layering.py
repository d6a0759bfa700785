"""The packages of acp_fast import each other in one direction only.

From the bottom up::

    _core  <-  _io  <-  _async  <-  _transports  <-  _typed, conductor  <-  acp_fast

A package may import the packages below it, never one above it, and
``_typed`` and ``conductor`` do not import each other. Everything else in
``acp_fast`` (``__init__``, ``testing``, ``helpers``, ``compat``, ``contrib``,
the CLI, the benchmarks, the examples) is the top. Two leaves stand beside
the stack: ``schema`` (the generated bindings) and ``_errors``; they import nothing from acp_fast but
themselves, and any layer above ``_core`` may import them. ``_core`` imports
the standard library only, and nothing imports ``codegen`` (but the CLI's
``codegen`` command, from a source checkout).

Every import counts, including those inside functions and under
``TYPE_CHECKING``: a type-level import circle is a circle too.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "acp_fast"

# Rank of each layer; a module may import modules of a lower rank, and of its
# own layer (the same package). The top level (rank 5) may import anything.
LAYERS = {
    "_core": 0,
    "_io": 1,
    "_async": 2,
    "_transports": 3,
    "_typed": 4,
    "conductor": 4,
}
TOP = 5
LEAVES = ("schema", "_errors", "_viewer")
# The one exception: ``acp-fast codegen`` runs the generator when acp_fast
# runs from a source checkout (and says so when codegen/ is not there).
ALLOWED = {("acp_fast._cli", "codegen.__main__")}


def layer_of(module: str) -> str:
    """The layer name of ``module`` (a dotted name under acp_fast)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "acp_fast"
    if parts[1] in LAYERS or parts[1] in LEAVES:
        return parts[1]
    return "acp_fast"


def imported_modules(module: str, is_package: bool, source: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) for each import in ``source``."""
    package_parts = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package_parts[: len(package_parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if node.module is None:
                # ``from . import name``: name may be a submodule.
                for alias in node.names:
                    yield node.lineno, f"{target}.{alias.name}"
            else:
                yield node.lineno, target


def violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """What in ``source`` (the text of ``module``) breaks the layering."""
    found = []
    here = layer_of(module)
    for line, target in imported_modules(module, is_package, source):
        top = target.split(".")[0]
        where = f"{module}:{line} imports {target}"
        if (module, target) in ALLOWED:
            continue
        if top == "codegen":
            found.append(f"{where}: nothing imports codegen")
            continue
        if here == "_core":
            if top != "acp_fast" and top not in sys.stdlib_module_names:
                found.append(f"{where}: _core imports the standard library only")
            elif top == "acp_fast" and layer_of(target) != "_core":
                found.append(f"{where}: _core imports the standard library only")
            continue
        if top != "acp_fast":
            continue
        there = layer_of(target)
        if here in LEAVES:
            if there != here:
                found.append(f"{where}: {here} imports nothing from acp_fast but itself")
            continue
        if there in LEAVES or there == here:
            continue
        rank = LAYERS.get(here, TOP)
        if rank == TOP:
            continue
        if LAYERS.get(there, TOP) >= rank:
            found.append(f"{where}: {here} may not import {there}")
    return found


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def test_imports_follow_the_layers() -> None:
    found = []
    for module, path in modules():
        found += violations(
            module, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py"
        )
    assert found == []


def test_every_package_is_classified() -> None:
    # A new package must be given its place in the stack, not fall to the top
    # by default.
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    # compat and contrib build on the class API (_typed): they are the top.
    assert packages - set(LAYERS) - set(LEAVES) == {"_bench", "examples", "compat", "contrib"}


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("acp_fast._io.fd", "from .._async import connection"),
        ("acp_fast._io.fd", "from acp_fast._transports.base import FdTransport"),
        ("acp_fast._async.builder", "from .._transports import Transport"),
        ("acp_fast._async.builder", "import acp_fast"),
        ("acp_fast._async.builder", "from .. import testing"),
        ("acp_fast._transports.base", "from .._typed.agent import BaseAgent"),
        ("acp_fast._typed.agent", "from ..conductor import Conductor"),
        ("acp_fast.conductor._conductor", "from .._typed import client"),
        ("acp_fast._core._framing_py", "import anyio"),
        ("acp_fast._core._framing_py", "from .._errors import Error"),
        ("acp_fast.schema._base", "from acp_fast._errors import Error"),
        ("acp_fast._errors", "from .schema import v1"),
        ("acp_fast._async.messages", "import codegen.render"),
        ("acp_fast.testing", "from codegen import main"),
        ("acp_fast._async.builder", "def f():\n    from .._transports import stdio\n"),
        (
            "acp_fast._async.builder",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from .._transports import Transport\n",
        ),
    ],
)
def test_the_rule_catches_an_upward_import(module: str, source: str) -> None:
    assert violations(module, source)


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("acp_fast._io.fd", "import os\nfrom .channel import Channel"),
        ("acp_fast._async.connection", "from .._io.channel import Channel\nfrom . import _wire"),
        ("acp_fast._async.messages", "from ..schema import _codec\nfrom .._errors import Error"),
        ("acp_fast._transports.base", "from .._async.builder import Builder"),
        ("acp_fast._typed.agent", "from .._transports import stdio\nfrom .._core import MISSING"),
        ("acp_fast.testing", "from ._typed.agent import BaseAgent\nimport anyio"),
        ("acp_fast._core", "from ._constants import MISSING\nimport sys"),
        ("acp_fast.schema.v1", "from acp_fast.schema._base import Base\nimport msgspec"),
    ],
)
def test_the_rule_allows_a_downward_import(module: str, source: str) -> None:
    assert violations(module, source, is_package=module == "acp_fast._core") == []
