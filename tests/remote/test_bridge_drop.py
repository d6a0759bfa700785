"""A WebSocket client that drops its socket, against a real ``acp-fast serve``.

A peer going away is a normal end (docs/remote.md, "Serving"): the server
stops that connection's agent, logs no traceback and no asyncio
"socket.send() raised exception." lines, and goes on serving others.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest
from anyio.abc import SocketAttribute, SocketStream
from websockets.client import ClientProtocol
from websockets.frames import Frame
from websockets.protocol import State
from websockets.uri import parse_uri

import acp_fast as acp
from tests.remote.agent import RecordingClient

from .test_cli import ROOT, free_port

pytestmark = pytest.mark.anyio


def start_server(port: int, kind: str, pids: Path, stderr: Path) -> subprocess.Popen[bytes]:
    if kind == "bridge":
        # Each connection's agent notes its pid, so the test can see it stopped.
        python = shlex.quote(sys.executable)
        agent = f"echo $$ >> {shlex.quote(str(pids))}; exec {python} -m tests.remote.agent"
        target = ["--", "sh", "-c", agent]
    else:  # in the server's process: it floods the socket's mailbox fastest
        target = ["tests.remote.agent:RemoteTestAgent"]
    return start_serve(port, target, stderr)


def start_serve(port: int, target: list[str], stderr: Path) -> subprocess.Popen[bytes]:
    """``acp-fast serve --http 127.0.0.1:PORT TARGET...``, once it answers
    its health check; its stderr goes to ``stderr``."""
    command = [sys.executable, "-m", "acp_fast", "serve", "--http", f"127.0.0.1:{port}", *target]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with stderr.open("wb") as err:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=err)
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


class RawClient:
    """A WebSocket client on a bare TCP stream, so that it can drop it."""

    def __init__(self, stream: SocketStream, url: str) -> None:
        self.stream = stream
        self.protocol = ClientProtocol(parse_uri(url))

    async def handshake(self) -> None:
        self.protocol.send_request(self.protocol.connect())
        await self._flush()
        while self.protocol.state is State.CONNECTING:
            self.protocol.receive_data(await self.stream.receive())
        self.protocol.events_received()  # the 101 response

    async def send(self, message: dict[str, object]) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        await self._flush()

    async def receive(self) -> list[dict[str, object]]:
        while True:
            self.protocol.receive_data(await self.stream.receive())
            frames = [e for e in self.protocol.events_received() if isinstance(e, Frame)]
            if frames:
                return [json.loads(frame.data) for frame in frames]

    async def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                await self.stream.send(data)

    async def drop(self) -> None:
        """Close the TCP socket at once: no Close frame, a reset (SO_LINGER 0)."""
        sock = self.stream.extra(SocketAttribute.raw_socket)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await self.stream.aclose()


def wait_exited(pid: int, timeout: float) -> bool:
    """Whether ``pid`` (not our child) exits within ``timeout``: its pidfd is
    readable once it has."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([pidfd], [], [], timeout)[0])
    finally:
        os.close(pidfd)


@pytest.mark.parametrize("kind", ["bridge", "factory"])
async def test_a_dropped_socket_ends_quietly_and_others_are_served(
    tmp_path: Path, kind: str
) -> None:
    port = free_port()
    pids, stderr = tmp_path / "pids", tmp_path / "stderr"
    server = start_server(port, kind, pids, stderr)
    url = f"ws://127.0.0.1:{port}/acp"
    try:
        with anyio.fail_after(30):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            client = RawClient(stream, url)
            await client.handshake()
            await client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": 1}})  # fmt: skip
            await client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                               "params": {"cwd": "/", "mcpServers": []}})  # fmt: skip
            answered: set[object] = set()
            while 2 not in answered:
                answered.update(m.get("id") for m in await client.receive())
            prompt = {"sessionId": "s-1", "prompt": [{"type": "text", "text": "many 1000000"}]}
            await client.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                               "params": prompt})  # fmt: skip
            # The barrier: the agent is streaming updates when the socket drops.
            while not any(m.get("method") == "session/update" for m in await client.receive()):
                pass
            await client.drop()

            # Another client is served meanwhile, by an agent of its own.
            recording = RecordingClient()
            transport = acp.WebSocketTransport(url)
            async with acp.connect_to_agent(recording, transport) as agent:
                await agent.initialize()
                session = await agent.new_session(cwd="/")
                result = await agent.prompt(session.session_id, "many 5")
                assert result.stop_reason == "end_turn"
                assert recording.updates == [f"{n} " for n in range(5)]
            if kind == "bridge":
                first, second = map(int, pids.read_text().split())
                # Stopped: its stdin closed, then terminated (docs/remote.md).
                assert await anyio.to_thread.run_sync(wait_exited, first, 20.0)
    finally:
        server.terminate()
        server.wait(10)
    log = stderr.read_text()
    assert "Traceback" not in log
    assert "socket.send() raised" not in log
    assert "an ACP connection failed" not in log


def test_the_sender_finds_the_transport_of_a_protocols_send() -> None:
    """Under uvicorn the sender asks the transport behind ``send`` whether it
    is closing; a ``send`` with no transport behind it (another server, a
    middleware's wrapper) gets the every-4-frames checkpoint instead."""
    from acp_fast._transports.remote.server import _closing_probe, _transport_behind

    class Transport:
        closing = False

        def is_closing(self) -> bool:
            return self.closing

    class Protocol:
        def __init__(self) -> None:
            self.transport = Transport()

        async def send(self, message: object) -> None: ...

    protocol = Protocol()
    assert _transport_behind(protocol.send) is protocol.transport
    probe = _closing_probe(_transport_behind(protocol.send))
    assert probe is not None and probe() is False
    protocol.transport.closing = True
    assert probe() is True

    async def wrapped(message: object) -> None: ...

    assert _transport_behind(wrapped) is None
    assert _closing_probe(None) is None


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="TCP_CORK is Linux's")
def test_the_sender_corks_a_tcp_transports_socket_and_only_that() -> None:
    """A batch of frames is sent corked (docs/remote.md, "Performance"): the
    corker sets and clears TCP_CORK on the socket of a TCP transport, and
    there is none for a Unix socket or a transport without one."""
    from acp_fast._transports.remote.server import _corker

    class Transport:
        def __init__(self, sock: socket.socket | None) -> None:
            self.sock = sock

        def get_extra_info(self, name: str) -> object:
            return self.sock if name == "socket" else None

    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()) as tcp:
            cork = _corker(Transport(tcp))
            assert cork is not None
            cork(True)
            assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 1
            cork(False)
            assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
    unix, other = socket.socketpair()
    with unix, other:
        assert _corker(Transport(unix)) is None
    assert _corker(Transport(None)) is None
    assert _corker(object()) is None


@pytest.mark.skipif(not hasattr(socket, "TCP_CORK"), reason="TCP_CORK is Linux's")
@pytest.mark.parametrize("ws", ["websockets-sansio", "wsproto"])
def test_uvicorns_send_leads_to_a_transport_to_probe_and_cork(
    serve_app: Callable[..., str], ws: str
) -> None:
    """What the sender reaches through ``send`` is there in each of uvicorn's
    WebSocket implementations: the closing probe and the corker."""
    from websockets.sync.client import connect

    from acp_fast._transports.remote.server import _closing_probe, _corker, _transport_behind

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        transport = _transport_behind(send)
        found = {
            "probe": _closing_probe(transport) is not None,
            "cork": _corker(transport) is not None,
        }
        await send({"type": "websocket.send", "text": json.dumps(found)})
        await receive()  # the client's close

    url = serve_app(app, ws=ws).replace("http://", "ws://") + "/"
    with connect(url) as socket_:
        assert json.loads(socket_.recv(timeout=10)) == {"probe": True, "cork": True}
