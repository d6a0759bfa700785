"""NDJSON framing: LineBuffer.feed on both cores.

* a 64 KiB read of small whole lines (the steady state of a busy connection);
* the same stream cut at arbitrary points (lines carried across reads);
* a 1 MB line fed whole, and the same line arriving in 64 KiB reads (the
  shape of an ``fs/read_text_file`` answer on a pipe).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

SMALL = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1",'
    b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
    b'"text":"token 42 "}}}}\n'
)
READ = 64 * 1024
STREAM = SMALL * (READ // len(SMALL))
BIG_LINE = b'{"jsonrpc":"2.0","id":7,"result":{"content":"' + b"x" * 1_000_000 + b'"}}\n'


def _setup(benchmark: Any, core_tag: str, lines: int) -> None:
    benchmark.extra_info["core"] = core_tag
    benchmark.extra_info["lines_per_round"] = lines


def test_whole_small_lines(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    framing = core_module("framing")
    buffer = framing.LineBuffer()
    _setup(benchmark, core_tag, STREAM.count(b"\n"))
    lines = benchmark(buffer.feed, STREAM)
    assert len(lines) == STREAM.count(b"\n")


@pytest.mark.parametrize("offset", [1, 97])
def test_chunked_small_lines(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType], offset: int
) -> None:
    """Reads that cut lines in two: each read finishes one carried line."""
    framing = core_module("framing")
    data = STREAM * 4
    chunks = [data[i : i + READ] for i in range(offset, len(data), READ)]

    def run() -> int:
        buffer = framing.LineBuffer()
        buffer.feed(data[:offset])
        return sum(len(buffer.feed(chunk)) for chunk in chunks)

    _setup(benchmark, core_tag, data.count(b"\n"))
    assert benchmark(run) >= data.count(b"\n") - 1


def test_1mb_line_whole(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    framing = core_module("framing")
    buffer = framing.LineBuffer()
    _setup(benchmark, core_tag, 1)
    assert benchmark(buffer.feed, BIG_LINE) == [BIG_LINE[:-1]]


def test_1mb_line_in_64k_reads(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    framing = core_module("framing")
    chunks = [BIG_LINE[i : i + READ] for i in range(0, len(BIG_LINE), READ)]

    def run() -> list[Any]:
        buffer = framing.LineBuffer()
        out: list[Any] = []
        for chunk in chunks:
            out += buffer.feed(chunk)
        return out

    _setup(benchmark, core_tag, 1)
    assert benchmark(run) == [BIG_LINE[:-1]]
