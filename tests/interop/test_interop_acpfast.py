"""The interop contract with acp_fast on both ends (client and agent scripts).

A baseline for the runs against the reference SDKs: the same client and agent
programs, over a real subprocess and pipes, on both event loops.
"""

from __future__ import annotations

import anyio
import pytest

from tests.interop.acpfast_client import run_contract
from tests.interop.contract import acpfast_agent_cmd, check_client_report

pytestmark = pytest.mark.interop

BACKENDS = ["asyncio", "trio"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_acpfast_client_drives_acpfast_agent(backend):
    report = anyio.run(run_contract, acpfast_agent_cmd(backend), backend=backend)
    check_client_report(report, agent_name="interop-acp-fast-agent", session_prefix="acpfast-")
    request_id = report.cancel_wire["request"]["id"]
    # acp_fast answers -32800 without data (the TS SDK adds {requestId}).
    assert report.cancel_outcome == "error"
    assert report.cancel_error == {"code": -32800, "message": "Request cancelled"}
    assert report.cancel_wire["answer"] == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32800, "message": "Request cancelled"},
    }
