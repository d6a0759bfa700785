"""Shared pieces of the tracing tests: a recording observer, trace reading."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import acp_fast as acp

PROXY_TESTS = Path(__file__).resolve().parent.parent / "proxy"
AGENT_SCRIPT = PROXY_TESTS / "agent_script.py"
PROXY_SCRIPT = PROXY_TESTS / "proxy_script.py"
# A few interpreters start (and import acp_fast) before the first answer.
PROCESS_TIMEOUT = 30.0


class Recording(acp.Observer):
    """Keeps everything an observer is told, in order."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes]] = []
        self.lifecycle: list[tuple[Any, ...]] = []
        self.closed = False

    def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
        self.messages.append((direction, data))

    def on_request_sent(self, request_id: int, method: str) -> None:
        self.lifecycle.append(("sent", request_id, method))

    def on_request_cancelled(self, request_id: int, method: str) -> None:
        self.lifecycle.append(("cancelled", request_id, method))

    def on_request_answered(self, request_id: int, method: str) -> None:
        self.lifecycle.append(("answered", request_id, method))

    def on_request_failed(self, request_id: int, method: str, error: acp.Error) -> None:
        self.lifecycle.append(("failed", request_id, method, error.code))

    def on_close(self) -> None:
        self.closed = True

    def decoded(self, direction: str) -> list[Any]:
        return [json.loads(data) for d, data in self.messages if d == direction]


def command(*argv: str | Path) -> str:
    return shlex.join(str(part) for part in argv)


def agent_command(backend: str) -> list[str]:
    return [sys.executable, str(AGENT_SCRIPT), backend]


def read_trace(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The events of a trace file and its summary line (which comes last)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines, "an empty trace"
    summary = lines[-1]
    assert summary["type"] == "summary"
    events = lines[:-1]
    assert all(event["type"] != "summary" for event in events)
    return events, summary


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
