"""Every example the docs show runs, on both backends, and says what the docs say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"

# The lines each example must print (a request id varies: "{id}").
EXPECTED = {
    "cancel_explicit.py": [
        "agent: $/cancel_request for request {id}",
        "client: request {id} ended with -32800 Request cancelled",
    ],
    "cancel_timeout.py": [
        "client: gave up after 0.2 s; the agent was told to stop",
        "agent: $/cancel_request for request {id}",
    ],
    "cancel_scope.py": [
        "client: the task awaiting the request was cancelled",
        "agent: $/cancel_request for request {id}",
    ],
    "cancel_handle_guard.py": [
        "client: the caller bailed out; the guard cancelled request {id}",
        "agent: $/cancel_request for request {id}",
        "agent: $/cancel_request for request {id}",
        "client: request {id} stopped: Request cancelled",
    ],
    "cancel_prepared.py": [
        "client: prepared request {id}, nothing sent yet",
        "agent: $/cancel_request for request {id}",
        "client: callback got Request cancelled (-32800)",
    ],
    "cancel_run_until_cancelled.py": [
        "agent: stopped the work, answering -32800",
        "client: Request cancelled",
    ],
}


def normalise(line: str) -> str:
    # Request ids are positive and long; error codes are negative.
    return re.sub(r"(?<![-\d])\d{4,}\b", "{id}", line)


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("cancel_*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_example_runs(example, backend):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / example), backend],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=EXAMPLES,
    )
    assert result.returncode == 0, result.stderr
    assert [normalise(line) for line in result.stdout.splitlines()] == EXPECTED[example]
