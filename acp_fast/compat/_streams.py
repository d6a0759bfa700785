"""The official SDK's stream arguments as acp_fast transports."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .._transports import ByteStreams, Transport

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
        return ByteStreams(_AsyncioReceive(reader), _AsyncioSend(writer))
    raise TypeError(
        "expected an acp_fast transport, or an asyncio StreamWriter and StreamReader "
        f"(got {type(writer).__name__} and {type(reader).__name__})"
    )


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
