"""An in-memory link between two connections in one process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .._async._backend import Backend
from ._channel import Channel, MemoryChannel, _MemoryPipe
from .base import Transport

__all__ = ("MemoryTransport", "memory_pair")


class MemoryTransport(Transport):
    """One end of an in-memory link (see ``memory_pair``)."""

    def __init__(self, inbound: _MemoryPipe, outbound: _MemoryPipe) -> None:
        self._inbound = inbound
        self._outbound = outbound

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        channel = MemoryChannel(backend, self._inbound, self._outbound)
        try:
            yield channel
        finally:
            await channel.aclose()

    def close_input(self) -> None:
        """End this end's input: the connection on it reads EOF."""
        self._inbound.closed = True
        self._inbound.wake_reader()


def memory_pair(capacity: int = 256 * 1024) -> tuple[MemoryTransport, MemoryTransport]:
    """Two transports joined in memory: bytes, framing and all, no syscalls.

    ``capacity`` bounds the bytes in flight each way, like an OS pipe, so a
    slow reader paces the writer.
    """
    a_to_b, b_to_a = _MemoryPipe(capacity), _MemoryPipe(capacity)
    return MemoryTransport(b_to_a, a_to_b), MemoryTransport(a_to_b, b_to_a)
