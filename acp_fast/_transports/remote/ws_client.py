"""``WebSocketTransport``: a client connection over one WebSocket.

One text frame carries one JSON-RPC message each way. The handshake is
HTTP/1.1 (wsproto over an anyio TCP or TLS stream, so it runs on asyncio and
trio alike); the server names the connection in its ``Acp-Connection-Id``
response header. Closing the connection sends a Close frame. docs/remote.md
has the details.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ..._io.backend import Backend
from ..._io.channel import Channel
from ..base import Transport
from .channel import MessageChannel, spawn_free_standing
from .streams import Mailbox
from .wire import CONNECTION_HEADER

if TYPE_CHECKING:
    import ssl

__all__ = ("WebSocketError", "WebSocketTransport")

QUEUE_CAPACITY = 1024 * 1024


class WebSocketError(ConnectionError):
    """The WebSocket handshake was refused or the link broke."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class WebSocketTransport(Transport):
    """Connect to an agent served over a WebSocket at ``url`` (``ws://`` or ``wss://``).

    ``headers`` go on the handshake (``{"Authorization": "Bearer ..."}``,
    ``{"Cookie": ...}``); ``ssl_context`` configures TLS for ``wss://`` (the
    system's default trust otherwise); ``connect_timeout`` bounds the TCP
    connection and the handshake. A refused handshake raises
    ``WebSocketError`` (with the HTTP ``status``); a link that breaks later
    fails every pending request with a clear error.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout: float = 30.0,
        max_message_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(f"a WebSocket URL starts with ws:// or wss://, not {url!r}")
        self.url = url
        self.headers = dict(headers or {})
        self.ssl_context = ssl_context
        self.connect_timeout = connect_timeout
        self.max_message_bytes = max_message_bytes
        self.connection_id: str | None = None

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        import wsproto
        from wsproto import events

        parts = urlsplit(self.url)
        secure = parts.scheme == "wss"
        host = parts.hostname or "localhost"
        port = parts.port or (443 if secure else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        context = self.ssl_context
        if not secure:
            context = None
        elif context is None:
            import ssl

            context = ssl.create_default_context()
        ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        with anyio.fail_after(self.connect_timeout):
            stream: anyio.abc.ByteStream
            if context is not None:
                stream = await anyio.connect_tcp(
                    host, port, ssl_context=context, tls_standard_compatible=False
                )
            else:
                stream = await anyio.connect_tcp(host, port)
            try:
                host_header = parts.netloc.rpartition("@")[2]
                extra = []
                for name, value in self.headers.items():
                    if name.lower() == "host":
                        host_header = value  # given explicitly: replaces the URL's
                    else:
                        extra.append((name.encode(), value.encode()))
                request = events.Request(host=host_header, target=target, extra_headers=extra)
                await stream.send(ws.send(request))
                self.connection_id = await _handshake(ws, stream)
            except BaseException:
                await anyio.aclose_forcefully(stream)
                raise
        link = _SocketLink(self, backend, ws, stream)
        try:
            link.start()
            yield link.channel
        finally:
            await link.channel.aclose()
            await link.aclose()

    def __repr__(self) -> str:
        return f"WebSocketTransport({self.url!r})"


async def _handshake(ws: Any, stream: anyio.abc.ByteStream) -> str | None:
    from wsproto import events

    body = b""
    rejected: events.RejectConnection | None = None
    while True:
        data = await stream.receive()
        ws.receive_data(data)
        for event in ws.events():
            if isinstance(event, events.AcceptConnection):
                for name, value in event.extra_headers:
                    if name.decode().lower() == CONNECTION_HEADER:
                        return str(value.decode())
                return None
            if isinstance(event, events.RejectConnection):
                rejected = event
                if not event.has_body:
                    raise WebSocketError(
                        f"WebSocket refused: HTTP {event.status_code}", event.status_code
                    )
            elif isinstance(event, events.RejectData):
                body += event.data
                if event.body_finished and rejected is not None:
                    text = body.decode(errors="replace")[:200]
                    raise WebSocketError(
                        f"WebSocket refused: HTTP {rejected.status_code} {text}".strip(),
                        rejected.status_code,
                    )


class _Frames:
    """The channel's sink: each message becomes one text frame."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    def offer(self, message: bytes) -> bool:
        return self.mailbox.push(message)

    async def room(self) -> None:
        await self.mailbox.room()

    def end(self) -> None:
        self.mailbox.end()


class _SocketLink:
    """The reader and writer tasks of one WebSocket connection."""

    def __init__(
        self, transport: WebSocketTransport, backend: Backend, ws: Any, stream: anyio.abc.ByteStream
    ) -> None:
        self.transport = transport
        self.backend = backend
        self.ws = ws
        self.stream = stream
        self.outbox = Mailbox(backend, QUEUE_CAPACITY)
        self.channel = MessageChannel(backend, _Frames(self.outbox))
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.sent = anyio.Event()
        self.closing = False
        self.send_lock = anyio.Lock()
        self._task: Any = None  # asyncio holds its tasks only weakly

    def start(self) -> None:
        self._task = spawn_free_standing(self.backend, self._run, "acp_fast websocket client")

    async def _run(self) -> None:
        try:
            with self.scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._write)
                    await self._read()
                    group.cancel_scope.cancel()
        except Exception as exc:
            self.fail(f"the WebSocket failed: {exc!r}")
        finally:
            self.done.set()

    def fail(self, reason: str) -> None:
        if not self.closing:
            self.channel.fail_input(reason)
        self.scope.cancel()

    async def _send(self, event: Any) -> None:
        async with self.send_lock:
            await self.stream.send(self.ws.send(event))

    async def _write(self) -> None:
        from wsproto import events

        try:
            while True:
                items = await self.outbox.take()
                if items is None:
                    return
                data = b"".join(
                    self.ws.send(events.TextMessage(data=item.decode())) for item in items
                )
                async with self.send_lock:
                    await self.stream.send(data)
        finally:
            self.sent.set()

    async def _read(self) -> None:
        from wsproto import events
        from wsproto.connection import ConnectionState

        parts: list[str] = []
        size = 0
        limit = self.transport.max_message_bytes
        while True:
            # Frames that came with the handshake's answer are parsed first.
            for event in self.ws.events():
                if isinstance(event, events.TextMessage):
                    parts.append(event.data)
                    size += len(event.data)
                    if size > limit:
                        self.fail(f"a WebSocket message exceeds {limit} bytes")
                        return
                    if event.message_finished:
                        message = "".join(parts).encode()
                        parts, size = [], 0
                        await self.channel.put(message)
                elif isinstance(event, events.Ping):
                    await self._send(event.response())
                elif isinstance(event, events.CloseConnection):
                    if self.ws.state is ConnectionState.REMOTE_CLOSING:
                        try:
                            await self._send(event.response())
                        except (anyio.BrokenResourceError, OSError):
                            pass
                    # The server closed its side: the connection reads EOF.
                    self.channel.end_input()
                    return
            try:
                data = await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                self.fail("the WebSocket connection was lost")
                return
            self.ws.receive_data(data)

    async def aclose(self) -> None:
        from wsproto import events
        from wsproto.connection import ConnectionState

        self.closing = True
        with anyio.move_on_after(self.transport.connect_timeout):
            await self.sent.wait()
        try:
            if self.ws.state is ConnectionState.OPEN:
                with anyio.move_on_after(1, shield=True):
                    await self._send(events.CloseConnection(code=1000))
                    with anyio.move_on_after(1):
                        await self.done.wait()  # the server's Close answers ours
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        self.scope.cancel()
        await self.done.wait()
        await anyio.aclose_forcefully(self.stream)
