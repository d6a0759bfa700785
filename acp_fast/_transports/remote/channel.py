"""A channel whose far end exchanges whole messages instead of bytes.

Remote transports carry one JSON-RPC message per WebSocket frame, per POST
body or per SSE event, while a connection reads and writes newline-framed
bytes. ``MessageChannel`` joins the two inside one process:

* ``put(message)`` hands the connection one message it will ``receive()``;
  the input is bounded (``put`` waits while too much is unread), and
  ``end_input()`` ends it with an EOF, and ``lose_input(reason)`` with an
  EOF that says why (the link broke: the peer is gone, as when a process
  exits, docs/semantics.md §1.3);
* what the connection writes is cut at newlines and each complete message
  is offered to a ``MessageSink``. A sink that is full refuses it, and the
  connection's writer then waits for ``room()``: a far end that stops
  reading slows the connection down instead of growing a buffer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..._io.backend import Backend, Waiter
from ..._io.channel import Channel, ChannelError

__all__ = ("MessageChannel", "MessageSink", "spawn_free_standing")

INPUT_CAPACITY = 1024 * 1024


class MessageSink(Protocol):
    """Where a MessageChannel's output messages go."""

    def offer(self, message: bytes) -> bool:
        """Take one message (without its newline), or refuse it when full."""

    async def room(self) -> None:
        """Return once ``offer`` may succeed again (or the sink is gone)."""

    def end(self) -> None:
        """The connection ended its output: no message follows."""


class MessageChannel(Channel):
    """One connection's end of a message-oriented link (see the module)."""

    def __init__(
        self, backend: Backend, sink: MessageSink, *, input_capacity: int = INPUT_CAPACITY
    ) -> None:
        super().__init__(backend)
        self._sink = sink
        self._input: deque[bytes] = deque()
        self._input_size = 0
        self._input_capacity = input_capacity
        self._input_ended = False
        self._reader: Waiter | None = None
        self._putters: list[Waiter] = []
        self._partial = b""  # output after its last newline, so far
        self._closed = False

    # -- the far end's side -------------------------------------------------

    def put_nowait(self, message: bytes) -> None:
        """Queue one message for the connection, whatever the input holds."""
        if self._input_ended:
            return
        # One message per line: a pretty-printed body's newlines are only
        # whitespace (a raw newline inside a JSON string is invalid anyway).
        if b"\n" in message or b"\r" in message:
            message = message.replace(b"\r", b" ").replace(b"\n", b" ")
        self._input.append(message + b"\n")
        self._input_size += len(message) + 1
        self._wake_reader()

    async def put(self, message: bytes) -> None:
        """Queue one message, waiting while the input is full."""
        while self._input_size >= self._input_capacity and not self._input_ended:
            waiter = self.backend.new_waiter()
            self._putters.append(waiter)
            await waiter.wait()
        self.put_nowait(message)

    def end_input(self) -> None:
        """The far end is done: the connection reads EOF after what is queued."""
        self._input_ended = True
        self._wake_reader()
        self._release_putters()

    def lose_input(self, reason: str) -> None:
        """The link broke: the input ends, and the requests that its end
        fails say ``reason`` (``data.transport``). A broken link is the peer
        gone, like a process that exits: pending requests fail with
        ``acp.Error``, the connection's owner goes on (docs/remote.md)."""
        if not self._closed and not self._input_ended:
            self.ended_because(reason)
        self.end_input()

    @property
    def input_ended(self) -> bool:
        return self._input_ended

    def _wake_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.set()

    def _release_putters(self) -> None:
        putters, self._putters = self._putters, []
        for waiter in putters:
            waiter.set()

    # -- the connection's side ----------------------------------------------

    async def receive(self) -> bytes:
        while not self._input:
            if self._input_ended:
                return b""
            self._reader = self.backend.new_waiter()
            await self._reader.wait()
        data = self._input[0] if len(self._input) == 1 else b"".join(self._input)
        self._input.clear()
        self._input_size = 0
        self._release_putters()
        return data

    def _write_now(self, data: bytes | memoryview) -> int:
        if self._closed:
            raise ChannelError("write failed: the remote link is closed")
        buf = data if type(data) is bytes else bytes(data)
        taken = 0
        while True:
            end = buf.find(b"\n", taken)
            if end < 0:
                # The beginning of a message whose end is still to come.
                self._partial += buf[taken:]
                return len(buf)
            line = buf[taken:end]
            if self._partial:
                line = self._partial + line
            if line and not self._sink.offer(line):
                return taken  # this message is offered again once there is room
            self._partial = b""
            taken = end + 1
            if taken == len(buf):
                return taken

    async def _wait_writable(self) -> None:
        await self._sink.room()

    def _end_output(self) -> None:
        self._sink.end()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._input_ended = True
            self._input.clear()
            self._input_size = 0
            self._release_putters()
            if not self._write_closed:
                self._write_closed = True
                self._sink.end()


def spawn_free_standing(backend: Backend, run: Callable[[], Awaitable[Any]], name: str) -> Any:
    """Run ``run()`` in a task of its own, outside the caller's scopes.

    A transport's context is entered and left in different cancel scopes, so
    it cannot hold a task group; what must outlive an HTTP request (an agent
    serving a Streamable-HTTP connection) cannot live in the request's task
    either. The caller ends the task itself (a cancel scope inside ``run``),
    and keeps what this returns (asyncio holds its tasks only weakly).
    """
    if backend.name == "trio":
        import trio

        async def guarded() -> None:
            try:
                await run()
            except Exception:  # a system task's failure would end the whole run
                pass

        trio.lowlevel.spawn_system_task(guarded, name=name)
        return None
    import asyncio

    async def as_coroutine() -> Any:
        return await run()

    return asyncio.get_running_loop().create_task(as_coroutine(), name=name)
