"""acp_fast clients drive an acp_fast agent served by uvicorn, over HTTP and WebSocket.

Every guarantee of a local connection holds across the hop (docs/remote.md):
a session's updates arrive before its prompt's answer, ``$/cancel_request``
works both ways (answered -32800), ``session/cancel`` ends a turn, a lost
connection fails pending requests with a clear error, and closing the client
ends the agent's connection.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.http import AcpApp
from tests.remote.agent import RecordingClient, RemoteTestAgent
from tests.remote.server import RunningServer

pytestmark = pytest.mark.anyio

TIMEOUT = 20


def transport_for(kind: str, base: str, **options: Any) -> acp.Transport:
    if kind == "http":
        return acp.HttpTransport(base + "/acp", **options)
    return acp.WebSocketTransport(base.replace("http://", "ws://") + "/acp", **options)


@pytest.fixture(params=["http", "ws"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


class Watched:
    """A ``serve=`` function that records each connection and can cut it."""

    def __init__(self) -> None:
        self.ended = threading.Event()
        self.started = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.scope: anyio.CancelScope | None = None

    async def __call__(self, transport: acp.Transport) -> None:
        self.loop = asyncio.get_running_loop()
        try:
            with anyio.CancelScope() as self.scope:
                self.started.set()
                await acp.agent_builder(RemoteTestAgent()).connect_to(transport)
        finally:
            self.ended.set()

    def cut(self) -> None:
        """End the agent's side abruptly (from the test's thread)."""
        assert self.loop is not None and self.scope is not None
        self.loop.call_soon_threadsafe(self.scope.cancel)


async def test_updates_arrive_before_the_prompt_answer(serve_app: Any, kind: str) -> None:
    base = serve_app()
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for(kind, base)) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            for turn in range(3):
                client.updates.clear()
                result = await agent.prompt(session.session_id, "many 300")
                assert result.stop_reason == "end_turn"
                assert client.updates == [f"{n} " for n in range(300)], turn


async def test_sessions_are_independent(serve_app: Any, kind: str) -> None:
    base = serve_app()
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for(kind, base)) as agent:
            await agent.initialize()
            first = await agent.new_session(cwd="/")
            second = await agent.new_session(cwd="/")
            assert first.session_id != second.session_id
            async with anyio.create_task_group() as group:
                group.start_soon(agent.prompt, first.session_id, "many 100")
                group.start_soon(agent.prompt, second.session_id, "many 100")
            assert sorted(client.updates) == sorted([f"{n} " for n in range(100)] * 2)


async def test_cancel_request_from_the_client_is_answered_32800(serve_app: Any, kind: str) -> None:
    base = serve_app()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
            await agent.initialize()
            slow = agent.send_request(acp.UntypedMessage("_t/slow", {}))
            assert await agent.send_request(acp.UntypedMessage("_t/echo", {"a": 1})) == {"a": 1}
            slow.cancel()
            with pytest.raises(acp.Error) as caught:
                await slow
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED


async def test_cancel_request_from_the_agent_is_answered_32800(serve_app: Any, kind: str) -> None:
    base = serve_app()
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for(kind, base)) as agent:
            await agent.initialize()
            await agent.new_session(cwd="/")
            reply = await agent.send_request(acp.UntypedMessage("_t/client_cancel", {}))
            assert reply == {"code": -32800}
            await client.hang_cancelled.wait()


async def test_session_cancel_ends_the_turn(serve_app: Any, kind: str) -> None:
    base = serve_app()
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for(kind, base)) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            turn = agent.start_prompt(session.session_id, "wait")
            await client.updated.wait()
            await agent.cancel(session.session_id)
            result = await turn
            assert result.stop_reason == "cancelled"


async def test_agent_requests_are_answered(serve_app: Any, kind: str) -> None:
    base = serve_app()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            result = await agent.prompt(session.session_id, "ask")
            assert result.stop_reason == "end_turn"


async def test_a_lost_connection_fails_pending_requests(serve_app: Any, kind: str) -> None:
    """The link breaking is the peer's end, as a process's exit is over
    stdio: the pending request and every later one fail with ``acp.Error``
    naming what broke, and the code around them runs on (it is not
    cancelled), so ``except acp.Error`` around a call works."""
    watched = Watched()
    base = serve_app(AcpApp(serve=watched))
    errors: list[acp.Error] = []
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
            await agent.initialize()
            slow = agent.send_request(acp.UntypedMessage("_t/slow", {}))
            await agent.send_request(acp.UntypedMessage("_t/echo", {}))
            watched.cut()
            with pytest.raises(acp.Error) as pending:
                await slow
            errors.append(pending.value)
            with pytest.raises(acp.Error) as later:
                await agent.send_request(acp.UntypedMessage("_t/echo", {}))
            errors.append(later.value)
    for err in errors:
        assert err.code == acp.ErrorCode.INTERNAL_ERROR
        text = f"{err.message} {err.data}"
        assert "closed" in text or "ended" in text or "lost" in text, text
    assert acp.is_incoming_transport_closed(errors[0])
    assert isinstance(errors[0].data, dict) and errors[0].data.get("transport"), errors[0].data


async def test_writes_after_a_lost_connection_fail_instead_of_waiting(
    serve_app: Any, kind: str
) -> None:
    """Once the link broke nothing carries what is written: a sender that
    paces itself gets ``acp.Error`` at once, it is not left waiting for room
    in a buffer nobody empties."""
    watched = Watched()
    base = serve_app(AcpApp(serve=watched))
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
            await agent.initialize()
            watched.cut()
            with pytest.raises(acp.Error):  # the link's loss is seen
                await agent.send_request(acp.UntypedMessage("_t/echo", {}))
            with pytest.raises(acp.Error):
                for _ in range(100):  # 10 MB: far beyond any buffer's bound
                    agent.cx.send_notification(acp.UntypedMessage("_t/n", {"x": "a" * 100_000}))
                    await agent.cx.drain()


async def test_closing_the_client_ends_the_agent_connection(serve_app: Any, kind: str) -> None:
    watched = Watched()
    app = AcpApp(serve=watched)
    base = serve_app(app)
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
            await agent.initialize()
            assert len(app.connections) == 1
        assert await anyio.to_thread.run_sync(watched.ended.wait, TIMEOUT)
        for _ in range(100):  # the server forgets it right after the agent ended
            if not app.connections:
                break
            await anyio.sleep(0.02)
        assert not app.connections


async def test_a_refused_handshake_is_a_clear_error(serve_app: Any, kind: str) -> None:
    base = serve_app(token="secret")
    with anyio.fail_after(TIMEOUT):
        with pytest.raises((acp.Error, acp.WebSocketError)) as caught:
            async with acp.connect_to_agent(RecordingClient(), transport_for(kind, base)) as agent:
                await agent.initialize()
        assert "401" in str(caught.value)
        headers = {"Authorization": "Bearer secret"}
        async with acp.connect_to_agent(
            RecordingClient(), transport_for(kind, base, headers=headers)
        ) as agent:
            await agent.initialize()


async def test_mounted_in_starlette(serve_app: Any, kind: str) -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    base = serve_app(Starlette(routes=[Mount("/agent", app=AcpApp(RemoteTestAgent))]))
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for(kind, base + "/agent")) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            await agent.prompt(session.session_id, "many 5")
            assert client.updates == [f"{n} " for n in range(5)]


async def test_uvicorn_wsproto_implementation(serve_app: Any) -> None:
    # uvicorn's other WebSocket implementation serves the same protocol.
    base = serve_app(ws="wsproto")
    client = RecordingClient()
    with anyio.fail_after(TIMEOUT):
        async with acp.connect_to_agent(client, transport_for("ws", base)) as agent:
            await agent.initialize()
            session = await agent.new_session(cwd="/")
            result = await agent.prompt(session.session_id, "many 50")
            assert result.stop_reason == "end_turn"
            assert client.updates == [f"{n} " for n in range(50)]


async def test_wss_over_tls(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    # Fails, never skips, without it (as the interop tests do without node).
    assert openssl is not None, "openssl (Debian's openssl package) makes the certificate"
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    await anyio.run_process(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
    )
    app = AcpApp(RemoteTestAgent)
    server = await anyio.to_thread.run_sync(
        lambda: RunningServer(app, ssl_keyfile=str(key), ssl_certfile=str(cert))
    )
    try:
        context = ssl.create_default_context(cafile=str(cert))
        url = f"wss://127.0.0.1:{server.port}/acp"
        client = RecordingClient()
        with anyio.fail_after(TIMEOUT):
            transport = acp.WebSocketTransport(url, ssl_context=context)
            async with acp.connect_to_agent(client, transport) as agent:
                await agent.initialize()
                session = await agent.new_session(cwd="/")
                result = await agent.prompt(session.session_id, "many 500")
                assert result.stop_reason == "end_turn"
                assert client.updates == [f"{n} " for n in range(500)]
                big = {"x": "y" * 200_000}  # frames larger than one TLS record
                assert await agent.send_request(acp.UntypedMessage("_t/echo", big)) == big
    finally:
        await anyio.to_thread.run_sync(server.stop)
