"""The WebSocket client's framing against a server driven frame by frame.

The server here is websockets' sans-I/O server protocol on a loopback socket,
so each test decides exactly which frames arrive and how they are cut: the
frames that come with the handshake's answer, pings (answered with pongs),
fragmented and binary messages, a message of every length encoding, frames
split byte by byte, masked frames from a server, messages over the limit,
and the Close handshake (docs/remote.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from websockets.frames import Frame, Opcode
from websockets.server import ServerProtocol

import acp_fast as acp
from acp_fast._io.backend import current_backend
from acp_fast._io.channel import ChannelError

pytestmark = pytest.mark.anyio


class Peer:
    """The server's side of one socket: send raw bytes, read frames."""

    def __init__(self, stream: anyio.abc.SocketStream, protocol: ServerProtocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self.frames: list[Frame] = []

    def frame(self, opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
        self.protocol.send_frame(Frame(opcode, data, fin))
        return b"".join(self.protocol.data_to_send())

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def next_frame(self) -> Frame:
        while not self.frames:
            self.protocol.receive_data(await self.stream.receive())
            self.frames.extend(e for e in self.protocol.events_received() if isinstance(e, Frame))
            for data in self.protocol.data_to_send():
                if data:
                    await self.stream.send(data)
        return self.frames.pop(0)


@asynccontextmanager
async def serving(
    script: Callable[[Peer], Awaitable[None]], first: Callable[[Peer], bytes] | None = None
) -> AsyncIterator[str]:
    """A one-connection server running ``script``; ``first`` is sent with the 101."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def handle() -> None:
        stream = await listener.listeners[0].accept()  # type: ignore[attr-defined]
        protocol = ServerProtocol(max_size=None)
        while True:
            protocol.receive_data(await stream.receive())
            requests = protocol.events_received()
            if requests:
                break
        protocol.send_response(protocol.accept(requests[0]))
        peer = Peer(stream, protocol)
        head = b"".join(protocol.data_to_send())
        await stream.send(head + (first(peer) if first is not None else b""))
        try:
            await script(peer)
        finally:
            await stream.aclose()

    async with listener, anyio.create_task_group() as group:
        group.start_soon(handle)
        yield f"ws://127.0.0.1:{port}/acp"
        group.cancel_scope.cancel()


@asynccontextmanager
async def channel_to(url: str, **options: Any) -> AsyncIterator[Any]:
    transport = acp.WebSocketTransport(url, **options)
    async with transport._open(current_backend()) as channel:
        yield channel


async def read_lines(channel: Any, count: int) -> list[bytes]:
    lines: list[bytes] = []
    while len(lines) < count:
        data = await channel.receive()
        assert data, "EOF before every message arrived"
        assert data.endswith(b"\n")
        lines.extend(data[:-1].split(b"\n"))
    return lines


async def test_frames_of_every_kind_arrive_as_lines() -> None:
    big = b'{"x":"' + b"y" * 100_000 + b'"}'
    mid = b'{"x":"' + b"y" * 300 + b'"}'
    done = anyio.Event()

    async def script(peer: Peer) -> None:
        pong = await peer.next_frame()
        assert (pong.opcode, pong.data) == (Opcode.PONG, b"p")
        await peer.send(
            peer.frame(Opcode.TEXT, b'{"a":', fin=False)
            + peer.frame(Opcode.CONT, b"1", fin=False)
            + peer.frame(Opcode.PONG, b"unasked")
            + peer.frame(Opcode.CONT, b"}")
        )
        await peer.send(peer.frame(Opcode.BINARY, b"a", fin=False) + peer.frame(Opcode.CONT, b"b"))
        data = peer.frame(Opcode.TEXT, mid) + peer.frame(Opcode.TEXT, big)
        for at in range(0, 40):  # the first frames cut byte by byte
            await peer.send(data[at : at + 1])
        await peer.send(data[40:])
        await peer.send(peer.frame(Opcode.TEXT, b'{\n"pretty": 1\n}'))
        for _ in range(2):
            frame = await peer.next_frame()
            assert frame.opcode is Opcode.TEXT
            await peer.send(peer.frame(Opcode.TEXT, b'{"echo":' + frame.data + b"}"))
        await done.wait()
        await peer.send(peer.frame(Opcode.CLOSE, b"\x03\xe8"))
        close = await peer.next_frame()
        assert close.opcode is Opcode.CLOSE

    def first(peer: Peer) -> bytes:
        return peer.frame(Opcode.TEXT, b'{"early":1}') + peer.frame(Opcode.PING, b"p")

    with anyio.fail_after(10):
        async with serving(script, first) as url, channel_to(url) as channel:
            assert await read_lines(channel, 1) == [b'{"early":1}']
            channel.write(b"")  # the pong was queued with the read; nothing else to send
            lines = await read_lines(channel, 4)
            assert lines == [b'{"a":1}', mid, big, b'{ "pretty": 1 }']
            channel.write(b'{"n":1}\n{"n"')  # two messages, the second cut in two
            channel.write(b":2}\n")
            assert await read_lines(channel, 2) == [b'{"echo":{"n":1}}', b'{"echo":{"n":2}}']
            done.set()
            assert await channel.receive() == b""  # the server's Close: EOF


async def test_a_masked_frame_from_the_server_fails_the_read() -> None:
    async def script(peer: Peer) -> None:
        frame = bytes((0x81, 0x80 | 2)) + b"\x01\x02\x03\x04" + bytes((ord("{") ^ 1, ord("}") ^ 2))
        await peer.send(frame)
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with serving(script) as url, channel_to(url) as channel:
            with pytest.raises(ChannelError, match="WebSocket failed"):
                await channel.receive()


async def test_a_message_over_the_limit_fails_the_read() -> None:
    async def script(peer: Peer) -> None:
        await peer.send(peer.frame(Opcode.TEXT, b"x" * 5000)[:100])  # its header is enough
        await anyio.sleep_forever()

    with anyio.fail_after(10):
        async with serving(script) as url, channel_to(url, max_message_bytes=1000) as channel:
            with pytest.raises(ChannelError, match="exceeds 1000 bytes"):
                await channel.receive()


async def test_a_dropped_socket_is_a_lost_connection() -> None:
    async def script(peer: Peer) -> None:
        await peer.send(peer.frame(Opcode.TEXT, b"{}"))

    with anyio.fail_after(10):
        async with serving(script) as url, channel_to(url) as channel:
            assert await read_lines(channel, 1) == [b"{}"]
            # The peer's end, like a process's exit: EOF, saying what broke.
            assert await channel.receive() == b""
            assert channel.describe_end is not None
            assert "connection was lost" in (await channel.describe_end())["transport"]
