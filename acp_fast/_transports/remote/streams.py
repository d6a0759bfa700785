"""The server's outbound buffers: one bounded mailbox per SSE stream or socket.

A mailbox holds what the agent sent until its subscriber (an SSE response,
a WebSocket's sender task) takes it. It is bounded in bytes: once full it
refuses more, and the agent's writer waits for ``room()``, so a client that
stops reading paces the agent instead of growing the server's memory.
"""

from __future__ import annotations

from collections import deque

from ..._io.backend import Backend, Waiter
from ..._io.channel import ChannelError

__all__ = ("Mailbox",)


class Mailbox:
    """A bounded FIFO of encoded messages with one consumer at a time."""

    def __init__(self, backend: Backend, capacity: int) -> None:
        self.backend = backend
        self.capacity = capacity
        self.items: deque[bytes] = deque()
        self.size = 0
        self.ended = False  # the agent's output ended: drain, then stop
        self.closed = False  # dropped: refuse everything
        self.subscribed = False
        self._consumer: Waiter | None = None
        self._room_waiters: list[Waiter] = []

    @property
    def full(self) -> bool:
        return self.size >= self.capacity

    def push(self, item: bytes) -> bool:
        """Queue ``item``; False (nothing queued) when full."""
        if self.closed:
            raise ChannelError("write failed: the remote stream was closed")
        if self.size >= self.capacity and self.items:
            return False  # an empty mailbox takes one message of any size
        self.items.append(item)
        self.size += len(item)
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.set()
        return True

    async def room(self) -> None:
        while self.size >= self.capacity and self.items and not self.closed:
            waiter = self.backend.new_waiter()
            self._room_waiters.append(waiter)
            await waiter.wait()

    async def take(self) -> list[bytes] | None:
        """Everything queued (waiting for something); None once ended and empty."""
        while not self.items:
            if self.ended or self.closed:
                return None
            self._consumer = self.backend.new_waiter()
            await self._consumer.wait()
        items = list(self.items)
        self.items.clear()
        self.size = 0
        self._release_room()
        return items

    def end(self) -> None:
        self.ended = True
        self._wake_consumer()

    def close(self) -> None:
        self.closed = True
        self.items.clear()
        self.size = 0
        self._wake_consumer()
        self._release_room()

    def _wake_consumer(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.set()

    def _release_room(self) -> None:
        waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            waiter.set()
