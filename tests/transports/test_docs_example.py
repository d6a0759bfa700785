"""docs/examples/transports_tcp.py runs on both backends and prints what the docs say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "transports_tcp.py"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_tcp_example(backend: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), backend],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    assert re.fullmatch(r"client: the agent on port \d+ answered \{'hi': 1\}", lines[0])
    assert lines[1] == "server: closed"
