"""What every run of the interop contract must show (see peers/README.md).

Shared by the interop tests: checks of the acp_fast client's ``Report`` and of
the reference client peers' JSON reports, and the acp_fast agent's argv.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.interop.acpfast_client import BIG_SIZE, Report

HERE = Path(__file__).resolve().parent

PERMISSIONS = [
    {
        "toolCallId": "call-1",
        "options": [
            {"optionId": "allow", "kind": "allow_once"},
            {"optionId": "reject", "kind": "reject_once"},
        ],
    }
]
TOOL_UPDATES = [
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
WRITES = [{"path": "/interop/output.txt", "content": "INTEROP INPUT\n"}]


def acpfast_agent_cmd(backend: str) -> list[str]:
    """argv of the acp_fast contract agent on ``backend``."""
    return [sys.executable, str(HERE / "acpfast_agent.py"), "--backend", backend]


def check_client_report(
    report: Report, *, agent_name: str, session_prefix: str, remote: bool = False
) -> None:
    """Everything but the cancellation step, which depends on the agent."""
    assert report.protocol_version == 1
    assert report.agent_info is not None and report.agent_info["name"] == agent_name
    assert report.session_id is not None and report.session_id.startswith(session_prefix)

    hello = report.hello
    assert hello is not None
    assert hello.stop_reason == "end_turn"
    assert hello.chunks == ["Hello", " world", "done"]
    assert hello.permissions == PERMISSIONS
    assert hello.tool_updates == TOOL_UPDATES
    assert hello.reads == ["/interop/input.txt"]
    assert hello.writes == WRITES

    # Both ways of cancelling put the request on the wire first, then exactly
    # one $/cancel_request naming its id.
    wire = report.cancel_wire
    assert wire["order"] == ["_test/slow", "$/cancel_request"]
    request_id = wire["request"]["id"]
    assert wire["cancel"] == {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": request_id},
    }
    assert report.drop_wire["cancel"]["params"]["requestId"] == request_id + 1

    assert report.echo == {"text": "barrier"}

    wait = report.wait
    assert wait is not None
    assert wait.chunks == ["waiting"]
    assert wait.stop_reason == "cancelled"

    big = report.big
    assert big is not None
    assert big.chunks == [f"len={BIG_SIZE}"]
    assert big.reads == ["/interop/big.txt"]
    assert big.stop_reason == "end_turn"

    if not remote:
        # The agent exited on its own once its stdin closed: no SIGTERM needed.
        assert report.agent_returncode == 0, report.agent_stderr


def check_peer_report(report: dict[str, Any], *, client: str, remote: bool = False) -> None:
    """A reference client peer's report on the acp_fast agent (but cancelRequest)."""
    assert report["client"] == client
    assert report["ok"] is True
    assert report["initialize"]["protocolVersion"] == 1
    assert report["initialize"]["agentInfo"]["name"] == "interop-acp-fast-agent"
    assert report["sessionNew"]["sessionId"].startswith("acpfast-")

    hello = report["hello"]
    assert hello["stopReason"] == "end_turn"
    assert hello["chunks"] == ["Hello", " world", "done"]
    assert hello["permissionSeen"] is True
    assert hello["permissions"] == PERMISSIONS
    assert hello["toolUpdates"] == TOOL_UPDATES
    assert hello["reads"] == ["/interop/input.txt"]
    assert hello["writes"] == WRITES

    assert report["echo"]["result"] == {"text": "barrier"}
    wait = report["wait"]
    assert wait["chunks"] == ["waiting"]
    assert wait["cancelSent"] is True
    assert wait["stopReason"] == "cancelled"
    big = report["big"]
    assert big["chunks"] == [f"len={BIG_SIZE}"]
    assert big["reads"] == ["/interop/big.txt"]
    assert big["stopReason"] == "end_turn"
    if not remote:
        # acp_fast's agent on stdio exits 0 when its stdin ends.
        assert report["agentExit"] == {"code": 0, "signal": None}
