"""The viewer's input and its embedding (docs/tracing.md, "The viewer").

A trace is one JSON object per line. ``read_lines`` keeps the lines that
are objects, as they are (no decoding and re-encoding of 100k events), and
counts the others: garbage, a JSON array, the truncated last line of a
recorder that was killed. ``embed`` makes the joined events safe inside the
page's ``<script>`` element.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

__all__ = ("Skipped", "embed", "read_lines", "warn_skipped")

_raw = msgspec.json.Decoder(msgspec.Raw)

# Inside <script>, "</script>" ends the element and "<!--" can keep a later
# "</script>" from ending it; & and U+2028/U+2029 are escaped too, so the
# JSON means the same in any HTML or JS context. JSON has these characters
# only inside strings, where \uXXXX is the same character.
_EMBED = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


@dataclass(frozen=True)
class Skipped:
    """Lines left out: how many, and the number (from 1) of the first."""

    count: int = 0
    first: int = 0


def read_lines(path: str | Path, *, growing: bool = False) -> tuple[list[str], Skipped]:
    """The lines of ``path`` that are JSON objects, and what was left out.

    With ``growing`` (a file still being recorded), a last line without its
    newline is still being written: it is left out, and not counted.
    """
    parts: list[str] = []
    count = first = 0
    with open(path, encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, 1):
            if growing and not line.endswith("\n"):
                break  # the last line, still being written
            line = line.strip()
            if not line:
                continue
            if _is_object(line):
                parts.append(line)
                continue
            count += 1
            first = first or number
    return parts, Skipped(count, first)


def _is_object(line: str) -> bool:
    if not (line.startswith("{") and line.endswith("}")):
        return False
    try:
        _raw.decode(line)
    except msgspec.DecodeError:
        # msgspec refuses a lone surrogate (\ud800), which JSON.parse takes.
        try:
            value = json.loads(line, parse_constant=_not_json)
        except ValueError:
            return False
        return isinstance(value, dict)
    return True


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: JSON.parse refuses them


def warn_skipped(path: str | Path, skipped: Skipped) -> None:
    """One line on stderr saying what ``read_lines`` left out, if anything."""
    if skipped.count == 1:
        what = f"1 line of {path} that is not a JSON object (line {skipped.first})"
    elif skipped.count:
        what = (
            f"{skipped.count} lines of {path} that are not JSON objects"
            f" (the first: line {skipped.first})"
        )
    else:
        return
    print(f"acp-fast trace view: skipped {what}", file=sys.stderr, flush=True)


def embed(events_json: str) -> str:
    """``events_json`` as the text of a ``<script>`` element: the same JSON."""
    for char, escape in _EMBED:
        events_json = events_json.replace(char, escape)
    return events_json
