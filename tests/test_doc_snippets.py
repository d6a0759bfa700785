"""Every Python snippet of README.md and docs/*.md passes ``mypy --strict``,
and the README's run, against each other, as real processes.

A snippet is a fragment: it may await at the top level, and use names the
text around it introduces (``cx``, ``request``, a builder). Each is checked
as a module with one shared prelude that declares those names; one with a
top-level ``await`` becomes the body of an async function.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from tests.support import TIMEOUT

ROOT = Path(__file__).parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)

PRELUDE = """\
from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

import acp_fast as _acp_fast
import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1

# The names the text around the snippets introduces.
cx: acp.ConnectionTo[Any]
request: Any
agent: acp.Builder[Any]
proxy: acp.Builder[Any]
agent_builder: acp.Builder[Any]
client_builder: acp.Builder[Any]
project: str
main: Callable[[acp.ConnectionTo[Any]], Awaitable[None]]
work: Callable[[], Awaitable[Any]]
prepare_something: Callable[[], Awaitable[None]]
events: list[dict[str, Any]]
provider: Any


class MyAgent(_acp_fast.BaseAgent): ...


class Editor(_acp_fast.BaseClient): ...
"""


def snippets() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{document.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def awaits_at_top_level(code: str) -> bool:
    def visit(node: ast.AST) -> bool:
        if isinstance(node, (ast.Await, ast.AsyncWith, ast.AsyncFor)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        return any(visit(child) for child in ast.iter_child_nodes(node))

    return visit(ast.parse(code))


def imported_names(code: str) -> set[str]:
    """The names a snippet's own imports bind (``import acp_fast.compat as acp``)."""
    names = set()
    for node in ast.parse(code).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def as_module(code: str) -> str:
    if code.startswith("from __future__ import annotations"):
        return code  # a whole module, as a file in docs/examples is
    if awaits_at_top_level(code):
        code = "async def _snippet() -> None:\n" + textwrap.indent(code, "    ")
    # The snippet's own imports win over the prelude's (compat binds ``acp``).
    own = imported_names(code) - {"annotations"}
    prelude = "\n".join(line for line in PRELUDE.splitlines() if not (imported_names(line) & own))
    return prelude + "\n\n" + code


def test_there_are_snippets_to_check():
    names = [name for name, _ in snippets()]
    assert len(names) >= 15 and any(n.startswith("README.md") for n in names)


@pytest.mark.timeout(300)
def test_every_snippet_passes_mypy_strict(tmp_path):
    files = []
    for index, (name, code) in enumerate(snippets()):
        path = tmp_path / f"snippet_{index:02d}.py"
        path.write_text(f"# {name}\n" + as_module(code))
        files.append(path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,  # acp_fast importable as source, as the project's own mypy run sees it
    )
    # Name the snippet (its first line) beside each error.
    report = []
    for line in result.stdout.splitlines():
        header = tmp_path / Path(line.split(":", 1)[0]).name
        origin = header.read_text().splitlines()[0] if header.exists() else "?"
        report.append(f"{origin}: {line}")
    assert result.returncode == 0, "\n".join(report) or result.stderr


def readme(index: int) -> str:
    return [code for name, code in snippets() if name.startswith("README.md")][index]


def agent_script(tmp_path: Path) -> Path:
    """The README's agent, as it is written: a complete program."""
    path = tmp_path / "readme_agent.py"
    path.write_text(readme(0))
    return path


class Recorder(acp.BaseClient):
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, notification: v1.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            assert isinstance(update.content, v1.ContentBlockText)
            self.texts.append(update.content.text)


@pytest.mark.anyio
async def test_the_readme_agent_serves_text_and_image_blocks(tmp_path):
    client = Recorder()
    with anyio.fail_after(TIMEOUT * 4):
        async with acp.spawn_agent(client, [sys.executable, str(agent_script(tmp_path))]) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/project")
            result = await agent.send_request(
                v1.PromptRequest(
                    session_id=session.session_id,
                    prompt=[
                        v1.ContentBlockText(text="Hello"),
                        v1.ContentBlockImage(data="iVBORw0KGgo=", mime_type="image/png"),
                        v1.ContentBlockText(text="again"),
                    ],
                )
            )
    assert result.stop_reason == "end_turn"
    assert client.texts == ["Hello", "again"]


@pytest.mark.parametrize("index", [1, 2], ids=["client", "connection-api"])
def test_the_readme_client_snippets_run_against_the_readme_agent(tmp_path, index):
    command = f"[{sys.executable!r}, {str(agent_script(tmp_path))!r}]"
    code = re.sub(r'\["my-agent"(, "--stdio")?\]', command, readme(index))
    assert command in code
    program = tmp_path / "readme_client.py"
    program.write_text(as_module(code) + "\n\nanyio.run(_snippet)\n")
    result = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    if index == 1:
        assert "Hello" in result.stdout  # the update the Editor printed
