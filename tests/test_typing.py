"""The public API's types, as a type checker sees them.

``tests/typing/reveal_*.py`` put the type mypy must reveal in a
``# R: ...`` comment on the line before each ``reveal_type``; ``tests/typing/errors_*.py`` mark the lines mypy
must reject with the error code it must give (``# E: code``). One mypy run
checks both, in strict mode, the way a user's project would.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

HERE = Path(__file__).parent / "typing"
REVEAL = re.compile(r"^\s*#\s*R:\s*(?P<type>.+?)\s*$")
EXPECT_ERROR = re.compile(r"#\s*E:\s*(?P<code>[a-z-]+)\s*$")
REPORT = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


def expectations(pattern: re.Pattern[str], offset: int = 0) -> dict[tuple[str, int], str]:
    """Marked lines by (file name, line number + offset)."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = pattern.search(line)
            if match:
                found[path.name, number + offset] = match.group(1)
    return found


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, int, str, str]]:
    cache = tmp_path_factory.mktemp("mypy-cache")
    stdout, stderr, _ = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--show-error-codes",
            "--hide-error-context",
            "--cache-dir",
            str(cache),
            *map(str, sorted(HERE.glob("*.py"))),
        ]
    )
    assert not stderr, stderr
    rows = []
    for line in stdout.splitlines():
        match = REPORT.match(line)
        assert match, f"unexpected mypy output: {line}"
        rows.append((Path(match["file"]).name, int(match["line"]), match["kind"], match["text"]))
    return rows


def test_revealed_types_are_the_expected_ones(
    mypy_report: list[tuple[str, int, str, str]],
) -> None:
    revealed = {
        (name, line): re.sub(r'^Revealed type is "(.*)"$', r"\1", text).replace("?", "")
        for name, line, kind, text in mypy_report
        if kind == "note" and text.startswith("Revealed type is")
    }
    expected = expectations(REVEAL, offset=1)
    assert expected, "no reveal_type expectations found"
    assert revealed == expected


def test_mistakes_are_reported_with_their_error_codes(
    mypy_report: list[tuple[str, int, str, str]],
) -> None:
    errors = {}
    for name, line, kind, text in mypy_report:
        if kind == "error":
            code = re.search(r"\[([a-z-]+)\]$", text)
            errors[name, line] = code.group(1) if code else text
    expected = expectations(EXPECT_ERROR)
    assert expected, "no error expectations found"
    assert errors == expected
