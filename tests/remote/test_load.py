"""The load benchmark, scaled down: many connections held at once lose nothing.

Runs ``benchmarks/remote.py load`` (uvicorn in a subprocess, one worker) with
50 WebSocket and 10 Streamable-HTTP connections; the full 1,000 + 200 run is
the benchmark's default (benchmarks/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "remote.py"


@pytest.mark.slow
def test_many_connections_at_once_lose_nothing() -> None:
    command = [sys.executable, str(SCRIPT), "load", "--ws", "50", "--http", "10", "--timeout", "40"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=55)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["failures"] == 0, report["first_failures"]
    assert report["connections_held_at_once"] == 60
    assert report["updates_lost"] == 0
    assert report["round_trips"] == 180
