"""acp_fast against the official Python SDK (agent-client-protocol 0.12.1).

Real subprocesses over real pipes, both directions, on both event loops:

* the acp_fast client drives the SDK's agent peer through the contract. That
  SDK ignores ``$/cancel_request`` (it logs "Method not found" for the
  notification), so ``_test/slow`` still finishes normally after 0.5 s, and
  acp_fast delivers that answer to the caller that cancelled;
* the SDK's client peer (``spawn_agent_process``) drives the acp_fast agent.
  It cannot send ``$/cancel_request``: it gives up locally after 0.2 s.
"""

from __future__ import annotations

import time

import anyio
import pytest

from tests.interop.acpfast_client import run_contract
from tests.interop.contract import acpfast_agent_cmd, check_client_report, check_peer_report

pytestmark = pytest.mark.interop

BACKENDS = ["asyncio", "trio"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_acpfast_client_drives_python_sdk_agent(py_agent_cmd, backend):
    started = time.monotonic()
    report = anyio.run(run_contract, py_agent_cmd, backend=backend)
    assert time.monotonic() - started < 15

    check_client_report(report, agent_name="interop-py-agent", session_prefix="py-")

    # Cancelled, but the peer ignores cancellation: its normal answer arrives
    # and is what awaiting the request returns.
    request_id = report.cancel_wire["request"]["id"]
    assert report.cancel_outcome == "result"
    assert report.cancel_result == {"finished": True}
    assert report.cancel_wire["answer"] == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"finished": True},
    }
    # What the SDK made of our notification.
    assert (
        "[py_agent] ERROR Unhandled error while handling notification method=$/cancel_request"
        in report.agent_stderr
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_python_sdk_client_drives_acpfast_agent(run_client_peer, py_client_cmd, backend):
    agent_cmd = acpfast_agent_cmd(backend)
    started = time.monotonic()
    run = run_client_peer(py_client_cmd, agent_cmd)
    assert time.monotonic() - started < 15

    assert run.report is not None, run
    assert run.returncode == 0, run
    check_peer_report(run.report, client="py")

    # No $/cancel_request from this SDK: the acp_fast agent's _test/slow never
    # answers, and the client gave up on its own.
    cancel = run.report["cancelRequest"]
    assert cancel["mechanism"] == "client_timeout"
    assert cancel["outcome"] == "timeout"
