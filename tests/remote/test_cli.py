"""``acp-fast serve``: a stdio agent bridged, and a Python factory served, by real processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

import acp_fast as acp
from tests.remote.agent import RecordingClient

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["bridge", "factory"])
def served(request: pytest.FixtureRequest) -> Iterator[str]:
    port = free_port()
    if request.param == "bridge":
        target = ["--", sys.executable, "-m", "tests.remote.agent"]
    else:
        target = ["tests.remote.agent:RemoteTestAgent"]
    command = [sys.executable, "-m", "acp_fast", "serve", "--http", f"127.0.0.1:{port}", *target]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(base + "/health").text == "ok":
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("acp-fast serve did not start")
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_serve(served: str, kind: str) -> None:
    url = served + "/acp"
    transport: Any
    if kind == "http":
        transport = acp.HttpTransport(url)
    else:
        transport = acp.WebSocketTransport(url.replace("http://", "ws://"))
    client = RecordingClient()
    with anyio.fail_after(20):
        async with acp.connect_to_agent(client, transport) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            result = await agent.prompt(session.session_id, "many 20")
            assert result.stop_reason == "end_turn"
            assert client.updates == [f"{n} " for n in range(20)]
            slow = agent.send_request(acp.UntypedMessage("_t/slow", {}))
            await agent.send_request(acp.UntypedMessage("_t/echo", {}))
            slow.cancel()
            with pytest.raises(acp.Error) as caught:
                await slow
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_conductor_reaches_a_remote_agent(serve_app: Any, kind: str) -> None:
    base = serve_app()
    url = base + "/acp" if kind == "http" else base.replace("http://", "ws://") + "/acp"
    conductor = acp.Subprocess([sys.executable, "-m", "acp_fast", "conductor", "--agent", url])
    client = RecordingClient()
    with anyio.fail_after(20):
        async with acp.connect_to_agent(client, conductor) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            await agent.prompt(session.session_id, "many 5")
            assert client.updates == [f"{n} " for n in range(5)]
