"""A factory that fails when a connection calls it (docs/remote.md,
"Serving"): the failure is logged, the client's requests fail at once
instead of waiting for ever, and the server still stops when told."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest

import acp_fast as acp

from .test_cli import ROOT, free_port

pytestmark = pytest.mark.anyio

# Callable, so `serve` accepts it; called with no arguments it raises.
FAILING_FACTORY = "json:dumps"


def start(port: int, stderr: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "acp_fast", "serve", "--http", f"127.0.0.1:{port}"]
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [*command, FAILING_FACTORY], cwd=ROOT, env={**os.environ}, stderr=err
        )
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health").text == "ok":
                return process
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("acp-fast serve did not start")
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_a_failing_factory_fails_the_clients_requests(tmp_path: Path, kind: str) -> None:
    port = free_port()
    stderr = tmp_path / "stderr"
    server = start(port, stderr)
    url = f"127.0.0.1:{port}/acp"
    try:
        transport = (
            acp.WebSocketTransport(f"ws://{url}")
            if kind == "ws"
            else acp.HttpTransport(f"http://{url}")
        )
        with anyio.fail_after(15):
            with pytest.raises(acp.Error):
                async with acp.connect_to_agent(acp.BaseClient(), transport) as agent:
                    await agent.initialize()
        server.send_signal(signal.SIGINT)
        status = await anyio.to_thread.run_sync(server.wait, 15)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert status == 130
    log = stderr.read_text()
    assert log.count("an ACP connection failed") == 1, log
    assert "missing 1 required positional argument" in log
