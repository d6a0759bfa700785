"""The official SDK's stream arguments as acp_fast transports."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .._io.backend import Backend
from .._io.channel import Channel
from .._transports import ByteStreams, FdTransport, Transport

__all__ = ("transport_for",)


def transport_for(writer: Any, reader: Any) -> Transport | None:
    """``(writer, reader)`` as the official SDK takes them, as a transport.

    ``None, None`` is stdio (returned as None); an acp_fast ``Transport``
    passes through; an asyncio ``StreamWriter`` / ``StreamReader`` pair is
    wrapped.
    """
    if writer is None and reader is None:
        return None
    if isinstance(writer, Transport) and reader is None:
        return writer
    if isinstance(writer, asyncio.StreamWriter) and isinstance(reader, asyncio.StreamReader):
        direct = _socket_of(writer, reader)
        if direct is not None:
            return direct
        return ByteStreams(_AsyncioReceive(reader), _AsyncioSend(writer))
    raise TypeError(
        "expected an acp_fast transport, or an asyncio StreamWriter and StreamReader "
        f"(got {type(writer).__name__} and {type(reader).__name__})"
    )


def _socket_of(writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> Transport | None:
    """The streams' socket, served directly, when both are one socket connection.

    acp_fast then reads and writes the socket itself (a duplicate of its
    descriptor) instead of going through asyncio's stream machinery, which
    is several times slower per message. The asyncio transport stops reading
    (it would compete for the bytes) and stays open: closing the writer
    closes the socket, as before.
    """
    transport = writer.transport
    if getattr(reader, "_transport", None) is not transport or reader._buffer:  # type: ignore[attr-defined]
        return None  # separate pipes, or bytes already buffered by asyncio
    sock = writer.get_extra_info("socket")
    if sock is None or sock.type != socket.SOCK_STREAM:
        return None
    if writer.get_extra_info("ssl_object") is not None:
        return None  # TLS: the socket carries ciphertext
    pause = getattr(transport, "pause_reading", None)
    if pause is None:
        return None
    pause()
    fd = os.dup(sock.fileno())
    return _StreamSocket(fd, writer)


class _StreamSocket(FdTransport):
    """A duplicate of the streams' socket; the writer closes when the connection ends."""

    def __init__(self, fd: int, writer: asyncio.StreamWriter) -> None:
        super().__init__(fd, fd, close=True)
        self._writer = writer

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        try:
            async with super()._open(backend) as channel:
                yield channel
        finally:
            self._writer.close()


class _AsyncioReceive(ByteReceiveStream):
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        return None


class _AsyncioSend(ByteSendStream):
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: bytes) -> None:
        self._writer.write(item)
        await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()
