"""Prove the reference-SDK peers against each other before acp_fast is involved.

Each test runs a client peer that spawns an agent peer: real subprocesses,
real pipes, the real reference SDKs on both ends. The assertions read the
client's JSON report (see peers/README.md), not just its exit code.
"""

from __future__ import annotations

import sys
import time

import pytest

pytestmark = pytest.mark.interop

REPORT_KEYS = {
    "client",
    "agentCommand",
    "initialize",
    "sessionNew",
    "hello",
    "cancelRequest",
    "echo",
    "wait",
    "big",
    "agentExit",
    "ok",
}
AGENT_NAMES = {"ts": "interop-ts-agent", "py": "interop-py-agent"}
PAIRS = [("ts", "ts"), ("py", "py"), ("ts", "py"), ("py", "ts")]


@pytest.mark.parametrize(
    ("client", "agent"), PAIRS, ids=[f"{c}_client-{a}_agent" for c, a in PAIRS]
)
def test_client_agent_pair(request, run_client_peer, client, agent):
    client_cmd = request.getfixturevalue(f"{client}_client_cmd")
    agent_cmd = request.getfixturevalue(f"{agent}_agent_cmd")

    started = time.monotonic()
    run = run_client_peer(client_cmd, agent_cmd)
    elapsed = time.monotonic() - started

    assert run.report is not None, run
    report = run.report
    assert set(report) == REPORT_KEYS, run
    assert report["client"] == client
    assert report["agentCommand"] == agent_cmd
    assert report["ok"] is True, run
    assert run.returncode == 0, run
    assert elapsed < 10, f"{elapsed:.1f} s"

    init = report["initialize"]
    assert init["protocolVersion"] == 1
    assert init["agentInfo"]["name"] == AGENT_NAMES[agent]

    session_id = report["sessionNew"]["sessionId"]
    assert isinstance(session_id, str) and session_id.startswith(f"{agent}-")

    hello = report["hello"]
    assert hello["stopReason"] == "end_turn"
    assert hello["chunks"] == ["Hello", " world", "done"]
    assert hello["permissionSeen"] is True
    assert hello["permissions"] == [
        {
            "toolCallId": "call-1",
            "options": [
                {"optionId": "allow", "kind": "allow_once"},
                {"optionId": "reject", "kind": "reject_once"},
            ],
        }
    ]
    assert hello["toolUpdates"] == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "title": "Write file",
            "kind": "edit",
            "status": "pending",
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "title": None,
            "kind": None,
            "status": "completed",
        },
    ]
    assert hello["reads"] == ["/interop/input.txt"]
    assert hello["writes"] == [{"path": "/interop/output.txt", "content": "INTEROP INPUT\n"}]

    cancel = report["cancelRequest"]
    assert cancel["ok"] is True
    if client == "py":
        # The official Python SDK cannot send $/cancel_request: a local timeout.
        assert cancel["mechanism"] == "client_timeout"
        assert cancel["expected"] == [{"outcome": "timeout"}]
        assert cancel["outcome"] == "timeout"
        assert cancel["result"] is None and cancel["error"] is None
        assert cancel["ms"] < 2000
    elif agent == "ts":
        # Both ends cancellation-aware: the agent answers -32800 {requestId}.
        assert cancel["mechanism"] == "$/cancel_request"
        assert cancel["outcome"] == "error"
        assert cancel["result"] is None
        error = cancel["error"]
        assert error["code"] == -32800
        assert isinstance(error["data"]["requestId"], int)
    else:
        # The Python agent ignores $/cancel_request and finishes normally.
        assert cancel["mechanism"] == "$/cancel_request"
        assert cancel["outcome"] == "result"
        assert cancel["result"] == {"finished": True}
        assert cancel["error"] is None

    assert report["echo"]["result"] == {"text": "barrier"}

    wait = report["wait"]
    assert wait["chunks"] == ["waiting"]
    assert wait["cancelSent"] is True
    assert wait["stopReason"] == "cancelled"

    big = report["big"]
    assert big["chunks"] == ["len=10000000"]
    assert big["reads"] == ["/interop/big.txt"]
    assert big["stopReason"] == "end_turn"

    # Both agents exit on their own when the client closes their stdin.
    assert report["agentExit"] == {"code": 0, "signal": None}


@pytest.mark.parametrize("client", ["ts", "py"])
def test_client_reports_dead_agent_without_hanging(request, run_client_peer, client):
    """The report's checks are not vacuous: an agent that exits at once fails fast."""
    client_cmd = request.getfixturevalue(f"{client}_client_cmd")

    started = time.monotonic()
    run = run_client_peer(client_cmd, [sys.executable, "-c", "pass"])
    elapsed = time.monotonic() - started

    assert run.returncode == 1, run
    assert run.report is not None, run
    assert run.report["ok"] is False
    assert run.report["initialize"]["ok"] is False
    assert run.report["hello"] is None  # later steps are skipped, not run
    assert elapsed < 10, f"{elapsed:.1f} s"
