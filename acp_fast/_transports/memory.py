"""An in-memory link between two connections in one process."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._io.backend import Backend
from .._io.channel import Channel, ChannelError
from .base import Transport

__all__ = ("MemoryTransport", "memory_pair")


class _MemoryPipe:
    """One direction of an in-memory link, with a capacity like an OS pipe."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.closed = False  # the writer ended its output
        self.reader: Any = None  # Waiter of the parked reader
        self.writer: Any = None  # Waiter of the parked writer (pipe full)

    def wake_reader(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None:
            reader.set()

    def wake_writer(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.set()


class MemoryChannel(Channel):
    """One end of an in-memory link: bytes, framing and all, no system calls."""

    def __init__(self, backend: Backend, inbound: _MemoryPipe, outbound: _MemoryPipe) -> None:
        super().__init__(backend)
        self._inbound = inbound
        self._outbound = outbound

    async def receive(self) -> bytes:
        pipe = self._inbound
        while not pipe.chunks:
            if pipe.closed:
                return b""
            pipe.reader = self.backend.new_waiter()
            await pipe.reader.wait()
        data = pipe.chunks[0] if len(pipe.chunks) == 1 else b"".join(pipe.chunks)
        pipe.chunks.clear()
        pipe.size = 0
        pipe.wake_writer()
        return data

    def _write_now(self, data: bytes | memoryview) -> int:
        pipe = self._outbound
        if pipe.closed:
            raise ChannelError("write failed: the other end closed its input")
        room = pipe.capacity - pipe.size
        if room <= 0:
            return 0
        if len(data) > room:
            data = data[:room]
        # The reader gets bytes; a held rest (a memoryview) is copied once here.
        pipe.chunks.append(data if type(data) is bytes else bytes(data))
        pipe.size += len(data)
        pipe.wake_reader()
        return len(data)

    async def _wait_writable(self) -> None:
        pipe = self._outbound
        while pipe.size >= pipe.capacity and not pipe.closed:
            pipe.writer = self.backend.new_waiter()
            await pipe.writer.wait()

    def _end_output(self) -> None:
        self._outbound.closed = True
        self._outbound.wake_reader()

    async def aclose(self) -> None:
        self._end_output()
        # Nobody will read our input any more: unblock a writer on the far end.
        self._inbound.closed = True
        self._inbound.chunks.clear()
        self._inbound.size = 0
        self._inbound.wake_writer()


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
