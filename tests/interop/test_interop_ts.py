"""acp_fast against the TypeScript reference SDK (@agentclientprotocol/sdk 2.4.0).

Real subprocesses over real pipes, both directions, on both event loops:

* the acp_fast client (tests/interop/acpfast_client.py) drives the TS agent
  peer: initialize, session/new, a streamed prompt with a permission request
  and fs calls, cancellation of ``_test/slow`` (answered -32800), a dropped
  request, session/cancel ending a prompt with "cancelled", a 10 MB answer;
* the TS client peer drives the acp_fast agent (tests/interop/acpfast_agent.py)
  through the same contract; its AbortSignal sends ``$/cancel_request`` and
  the acp_fast agent answers -32800.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from tests.interop.acpfast_client import run_contract
from tests.interop.contract import acpfast_agent_cmd, check_client_report, check_peer_report

pytestmark = pytest.mark.interop

BACKENDS = ["asyncio", "trio"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_acpfast_client_drives_ts_agent(ts_agent_cmd, backend):
    started = time.monotonic()
    report = anyio.run(run_contract, ts_agent_cmd, backend=backend)
    assert time.monotonic() - started < 15

    check_client_report(report, agent_name="interop-ts-agent", session_prefix="ts-")

    # The TS agent honours $/cancel_request: acp_fast's cancel() is followed
    # by the peer's real answer, -32800 with data {requestId}, delivered to
    # whoever still awaits the request.
    request_id = report.cancel_wire["request"]["id"]
    assert report.cancel_outcome == "error"
    assert report.cancel_error == {
        "code": -32800,
        "message": "Request cancelled",
        "data": {"requestId": request_id},
    }
    assert report.cancel_wire["answer"] == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": -32800,
            "message": "Request cancelled",
            "data": {"requestId": request_id},
        },
    }
    # Both _test/slow handlers (cancelled, and dropped) saw their abort signal.
    dropped_id = report.drop_wire["cancel"]["params"]["requestId"]
    assert f"[ts_agent] _test/slow {request_id} cancelled" in report.agent_stderr
    assert f"[ts_agent] _test/slow {dropped_id} cancelled" in report.agent_stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_ts_client_drives_acpfast_agent(run_client_peer, ts_client_cmd, backend):
    agent_cmd = acpfast_agent_cmd(backend)
    started = time.monotonic()
    run = run_client_peer(ts_client_cmd, agent_cmd)
    assert time.monotonic() - started < 15

    assert run.report is not None, run
    assert run.returncode == 0, run
    check_peer_report(run.report, client="ts")

    # The TS client's AbortSignal sent $/cancel_request; the acp_fast agent's
    # handler (run_until_cancelled) answered -32800.
    cancel = run.report["cancelRequest"]
    assert cancel["mechanism"] == "$/cancel_request"
    assert cancel["outcome"] == "error"
    assert cancel["result"] is None
    assert cancel["error"]["code"] == -32800
    assert cancel["error"]["message"] == "Request cancelled"


@pytest.mark.parametrize("backend", BACKENDS)
def test_ts_agent_rejects_requests_pipelined_behind_initialize(ts_agent_cmd, backend):
    """A wire fact for clients: the TS agent answers -32600 to a request that
    arrives before its initialize answer went out. Await initialize first."""

    async def main() -> None:
        async def run(cx: Any) -> None:
            init = cx.send_request(v1.InitializeRequest(protocol_version=1))
            early = cx.send_request(acp.UntypedMessage("_test/echo", {"text": "early"}))
            with anyio.fail_after(5):
                assert (await init).protocol_version == 1
                with pytest.raises(acp.Error) as caught:
                    await early
                assert caught.value.code == -32600
                # After the answer, the same request goes through.
                late = await cx.send_request(acp.UntypedMessage("_test/echo", {"text": "late"}))
                assert late == {"text": "late"}

        agent = acp.Subprocess(ts_agent_cmd, stderr=lambda line: None)
        await acp.Client.builder().connect_with(agent, run)
        assert agent.returncode == 0

    anyio.run(main, backend=backend)
