"""A factory that fails when a connection calls it (docs/remote.md,
"Serving"): the failure is logged, the client's requests fail at once
instead of waiting for ever, and the server still stops when told."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

import acp_fast as acp

from .test_bridge_drop import start_serve
from .test_cli import free_port

pytestmark = pytest.mark.anyio

# Callable, so `serve` accepts it; called with no arguments it raises.
FAILING_FACTORY = "json:dumps"


@pytest.mark.parametrize("kind", ["ws", "http"])
async def test_a_failing_factory_fails_the_clients_requests(tmp_path: Path, kind: str) -> None:
    port = free_port()
    stderr = tmp_path / "stderr"
    server = start_serve(port, [FAILING_FACTORY], stderr)
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
