"""Test harness for connection-level tests (importable as ``tests.support``).

* ``RawPeer``: the far end of a connection, written and read as raw NDJSON
  lines, for asserting exactly what goes over the wire.
* ``serving(builder)``: run ``builder.connect_to`` against a RawPeer.
* ``connected(server, client)``: two acp_fast connections joined in memory;
  yields the client's ``cx``.
* ``simple(message)``, ``echo_server()``, ``CancelLog``: the conventions of the
  reference scenarios (docs/semantics.md §6: requests use ``simple_method``
  with ``{"message": ...}``, an echo handler answers
  ``{"result": "echo: <message>"}``, a barrier is a later round trip).

Every wait here is bounded by ``TIMEOUT``: a test that would hang fails.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import orjson

import acp_fast as acp
from acp_fast._core import LineBuffer
from acp_fast._io.backend import current_backend
from acp_fast.testing import memory_pair

TIMEOUT = 5.0
SIMPLE = "simple_method"


def simple(message: str) -> acp.UntypedMessage:
    return acp.UntypedMessage(SIMPLE, {"message": message})


async def echo(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
    responder.respond({"result": f"echo: {message.params['message']}"})


def echo_server(role: type[acp.Role] = acp.UntypedRole) -> acp.Builder[Any]:
    return role.builder().name("server").on_receive_request(echo, SIMPLE)


async def barrier(cx: Any, text: str = "barrier") -> None:
    """A round trip: everything sent before it has been dispatched by the peer."""
    with anyio.fail_after(TIMEOUT):
        assert await cx.send_request(simple(text)) == {"result": f"echo: {text}"}


class CancelLog:
    """Records the ids of the ``$/cancel_request`` notifications a builder sees."""

    def __init__(self) -> None:
        self.ids: list[Any] = []
        self.event = anyio.Event()

    def install(self, builder: acp.Builder[Any], **kwargs: Any) -> acp.Builder[Any]:
        async def record(message: acp.UntypedMessage, cx: Any) -> None:
            self.ids.append(message.params["requestId"])
            self.event.set()

        return builder.on_receive_notification(record, "$/cancel_request", **kwargs)

    async def wait(self) -> None:
        with anyio.fail_after(TIMEOUT):
            await self.event.wait()


class RawPeer:
    """The other end of a transport, speaking raw NDJSON."""

    def __init__(self, transport: acp.Transport) -> None:
        self._transport = transport
        self._framer = LineBuffer()
        self._lines: deque[bytes] = deque()
        self.eof = False

    async def __aenter__(self) -> RawPeer:
        self._context = self._transport._open(current_backend())
        self.channel = await self._context.__aenter__()
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self.channel.run)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        # The body's exception is not handed to the task group (it would wrap
        # it in an ExceptionGroup); it propagates on its own.
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)
        await self._context.__aexit__(None, None, None)

    def send(self, message: Any) -> None:
        """Write one line: bytes/str as given, anything else as JSON."""
        if isinstance(message, str):
            message = message.encode()
        if not isinstance(message, bytes):
            message = orjson.dumps(message)
        if not message.endswith(b"\n"):
            message += b"\n"
        self.channel.write(message)

    async def receive_line(self) -> bytes:
        with anyio.fail_after(TIMEOUT):
            while not self._lines:
                data = await self.channel.receive()
                if not data:
                    self.eof = True
                    raise EOFError("the connection closed its output")
                self._lines.extend(self._framer.feed(data))  # type: ignore[arg-type]
        return self._lines.popleft()

    async def receive(self) -> Any:
        return orjson.loads(await self.receive_line())

    async def receive_eof(self) -> None:
        """Read until the connection's output ends; there must be nothing else."""
        with anyio.fail_after(TIMEOUT):
            extra = []
            while True:
                try:
                    extra.append(await self.receive_line())
                except EOFError:
                    break
        assert extra == [], extra

    async def close_output(self) -> None:
        """End what we write: the connection reads EOF."""
        await self.channel.close_write()


@asynccontextmanager
async def serving(builder: acp.Builder[Any]) -> AsyncIterator[RawPeer]:
    """Serve ``builder`` (connect_to) and yield the raw peer talking to it.

    On exit the peer closes its output and the server must end without error.
    """
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(builder.connect_to, ours)
        async with RawPeer(theirs) as peer:
            yield peer
            await peer.close_output()
            with anyio.fail_after(TIMEOUT):
                while not peer.eof:
                    try:
                        await peer.receive_line()
                    except EOFError:
                        break


@asynccontextmanager
async def connected(
    server: acp.Builder[Any], client: acp.Builder[Any] | None = None
) -> AsyncIterator[Any]:
    """Two acp_fast connections in memory; yields the client side's cx."""
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(server.connect_to, ours)
        async with (client or acp.UntypedRole.builder().name("client")).connect(theirs) as cx:
            yield cx


# --- byte-stream transports (acp.ByteStreams) for transport-level scenarios ----


class MemoryByteStream(anyio.abc.ByteStream):
    """One end of an in-process, full-duplex anyio byte stream.

    ``max_chunk`` splits every send into pieces of at most that many bytes
    (each a separate item the reader must take), so a large message crawls
    through like a tiny pipe; ``capacity`` bounds how many pieces may wait
    unread (0: a send blocks until the reader takes it).
    """

    def __init__(
        self,
        send: anyio.abc.ObjectSendStream[bytes],
        receive: anyio.abc.ObjectReceiveStream[bytes],
        *,
        max_chunk: int | None = None,
    ) -> None:
        self._send = send
        self._receive = receive
        self._max_chunk = max_chunk
        self.closed = False
        self.eof_sent = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._receive.receive()

    async def send(self, item: bytes) -> None:
        step = self._max_chunk or len(item) or 1
        for start in range(0, len(item), step):
            await self._send.send(item[start : start + step])

    async def send_eof(self) -> None:
        self.eof_sent = True
        await self._send.aclose()

    async def aclose(self) -> None:
        self.closed = True
        await self._send.aclose()
        await self._receive.aclose()


def byte_stream_pair(
    *, capacity: float = 0, max_chunk: int | None = None
) -> tuple[MemoryByteStream, MemoryByteStream]:
    """Two connected ``MemoryByteStream`` ends (see its docstring)."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](capacity)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](capacity)
    return (
        MemoryByteStream(a_send, a_receive, max_chunk=max_chunk),
        MemoryByteStream(b_send, b_receive, max_chunk=max_chunk),
    )


def over(stream: anyio.abc.ByteStream) -> acp.ByteStreams:
    """A transport over one bidirectional byte stream."""
    return acp.ByteStreams(stream, stream)


class FailingReceiveStream(anyio.abc.ByteReceiveStream):
    """Yields ``lines`` (if any), then waits for ``fail`` and raises a read error.

    The error is ``error`` (by default an ``OSError``, what a broken pipe or
    socket raises), which a connection must report as a failure, never as a
    clean EOF.
    """

    def __init__(
        self, *lines: bytes, fail_now: bool = False, error: Exception | None = None
    ) -> None:
        self._lines = list(lines)
        self._error = error or OSError(5, "simulated read failure")
        self.fail = anyio.Event()
        if fail_now:
            self.fail.set()
        self.reads = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.reads += 1
        if self._lines:
            return self._lines.pop(0)
        await self.fail.wait()
        raise self._error

    async def aclose(self) -> None:
        pass


class RecordingSendStream(anyio.abc.ByteSendStream):
    """Accepts everything at once (or blocks until ``accept`` is set) and
    records it; ``on_send_start`` runs when a send begins, ``on_send`` after
    each accepted send."""

    def __init__(self, *, blocked: bool = False) -> None:
        self.data = bytearray()
        self.accept = anyio.Event()
        if not blocked:
            self.accept.set()
        self.on_send_start: Any = None
        self.on_send: Any = None
        self.closed = False

    async def send(self, item: bytes) -> None:
        if self.on_send_start is not None:
            self.on_send_start()
        await self.accept.wait()
        self.data += item
        if self.on_send is not None:
            self.on_send()

    async def aclose(self) -> None:
        self.closed = True

    def lines(self) -> list[Any]:
        return [orjson.loads(line) for line in bytes(self.data).splitlines()]
