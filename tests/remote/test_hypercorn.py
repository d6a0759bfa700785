"""The ASGI app under another server: hypercorn, with its asyncio and its trio worker.

Under trio the app's free-standing tasks (one per Streamable-HTTP
connection) are trio system tasks; these tests drive both transports
through each worker.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.http import AcpApp
from tests.remote.agent import RecordingClient, RemoteTestAgent

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["asyncio", "trio"])
def hypercorn_url(request: pytest.FixtureRequest) -> Iterator[str]:
    from hypercorn.config import Config

    config = Config()
    port = free_port()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "WARNING"
    app = AcpApp(RemoteTestAgent)
    stop = threading.Event()
    started = threading.Event()

    async def shutdown_trigger() -> None:
        started.set()
        await anyio.to_thread.run_sync(stop.wait)

    def run() -> None:
        if request.param == "trio":
            from functools import partial

            import trio
            from hypercorn.trio import serve as trio_serve

            serving = partial(trio_serve, app, config, shutdown_trigger=shutdown_trigger)
            trio.run(serving)
        else:
            import asyncio

            from hypercorn.asyncio import serve as asyncio_serve

            asyncio.run(asyncio_serve(app, config, shutdown_trigger=shutdown_trigger))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_served_by_hypercorn(hypercorn_url: str, kind: str) -> None:
    transport: Any
    if kind == "http":
        transport = acp.HttpTransport(hypercorn_url)
    else:
        transport = acp.WebSocketTransport(hypercorn_url.replace("http://", "ws://"))
    client = RecordingClient()
    with anyio.fail_after(20):
        async with acp.connect_to_agent(client, transport) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            result = await agent.prompt(session.session_id, "many 50")
            assert result.stop_reason == "end_turn"
            assert client.updates == [f"{n} " for n in range(50)]
            slow = agent.send_request(acp.UntypedMessage("_t/slow", {}))
            await agent.send_request(acp.UntypedMessage("_t/echo", {}))
            slow.cancel()
            with pytest.raises(acp.Error) as caught:
                await slow
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
