"""The README's main job: ``acp-fast demo`` drives the example agent over stdio."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
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
    assert f"[wrote 20 characters to {os.getcwd()}/notes/example-1.txt]" in out
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


def _example_agent(*lines: bytes) -> list[dict[str, object]]:
    result = subprocess.run(
        [sys.executable, "-m", "acp_fast", "example-agent"],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def test_example_agent_refuses_a_prompt_for_a_session_it_never_created():
    answers = _example_agent(
        b'{"jsonrpc":"2.0","id":1,"method":"session/prompt",'
        b'"params":{"sessionId":"nobody","prompt":[{"type":"text","text":"hi"}]}}'
    )
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32602,
                "message": "Invalid params",
                "data": {"sessionId": "nobody", "reason": "unknown session"},
            },
        }
    ]


def test_example_agent_refuses_a_relative_cwd():
    [answer] = _example_agent(
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"rel","mcpServers":[]}}'
    )
    assert answer["error"] == {
        "code": -32602,
        "message": "Invalid params",
        "data": {"cwd": "rel", "reason": "must be absolute"},
    }
