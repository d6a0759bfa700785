"""The README's main job: ``acp-fast demo`` drives the example agent over stdio."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_end_to_end(backend):
    result = subprocess.run(
        [sys.executable, "-m", "acp_fast", "demo", "--backend", backend],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "connected to acp-fast-example-agent, protocol v1" in out
    assert "You said: Hello from the demo" in out
    assert "[permission asked for note-1: allowing]" in out
    assert "[wrote 20 characters to notes/" in out
    assert "[tool call note-1: completed]" in out
    assert out.count("stop reason: end_turn") == 1
    assert out.count("stop reason: cancelled") == 1
    assert "answered -32800 Request cancelled" in out
    assert out.rstrip().endswith("the agent exited; done")


def test_example_agent_speaks_acp_on_stdio():
    # A raw client: initialize, then EOF; the agent answers and exits 0.
    request = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    result = subprocess.run(
        [sys.executable, "-m", "acp_fast", "example-agent"],
        input=request,
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert b'"id":1,"result":{"protocolVersion":1' in result.stdout
    assert b"acp-fast-example-agent" in result.stdout
