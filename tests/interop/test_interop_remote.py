"""Remote transports against the TypeScript reference SDK (2.4.0), both ways.

* The TS client peer (``createHttpStream`` / ``createWebSocketStream``)
  drives the contract's acp_fast agent served by ``acp_fast.http.AcpApp``
  under uvicorn: its AbortSignal's ``$/cancel_request`` is answered -32800.
* acp_fast's contract client, over ``acp.HttpTransport`` and
  ``acp.WebSocketTransport``, drives the TS agent served by the SDK's
  ``AcpServer`` (``ts_agent.mjs --serve``: node:http and ``ws``), on asyncio
  and trio; its cancel() gets the TS agent's -32800.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.http import AcpApp
from tests.interop.acpfast_agent import build
from tests.interop.acpfast_client import run_contract
from tests.interop.contract import check_client_report, check_peer_report
from tests.remote.server import RunningServer

pytestmark = pytest.mark.interop

KINDS = ["http", "ws"]


def endpoint(base: str, kind: str) -> str:
    url = base + "/acp"
    return url.replace("http://", "ws://") if kind == "ws" else url


@pytest.fixture
def acpfast_server() -> Iterator[str]:
    server = RunningServer(AcpApp(build))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def ts_server(ts_agent_cmd: list[str]) -> Iterator[str]:
    process = subprocess.Popen(
        [*ts_agent_cmd, "--serve"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, "ts_agent.mjs --serve did not start"
        yield f"http://127.0.0.1:{json.loads(line)['port']}"
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize("kind", KINDS)
def test_ts_client_drives_acpfast_server(
    run_client_peer: Any, ts_client_cmd: list[str], acpfast_server: str, kind: str
) -> None:
    run = run_client_peer(ts_client_cmd, [endpoint(acpfast_server, kind)])
    assert run.report is not None, run
    assert run.returncode == 0, run
    check_peer_report(run.report, client="ts", remote=True)
    cancel = run.report["cancelRequest"]
    assert cancel["mechanism"] == "$/cancel_request"
    assert cancel["outcome"] == "error"
    assert cancel["error"]["code"] == -32800


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", KINDS)
def test_acpfast_client_drives_ts_server(ts_server: str, kind: str, backend: str) -> None:
    url = endpoint(ts_server, kind)
    transport: acp.Transport
    if kind == "http":
        transport = acp.HttpTransport(url)
    else:
        transport = acp.WebSocketTransport(url)
    report = anyio.run(run_contract, [], transport, backend=backend)
    check_client_report(report, agent_name="interop-ts-agent", session_prefix="ts-", remote=True)
    assert report.cancel_outcome == "error"
    assert report.cancel_error is not None and report.cancel_error["code"] == -32800
