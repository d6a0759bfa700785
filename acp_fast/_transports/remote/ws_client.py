"""``WebSocketTransport``: a client connection over one WebSocket.

One text frame carries one JSON-RPC message each way. The handshake is
HTTP/1.1; the server names the connection in its ``Acp-Connection-Id``
response header. Closing the connection sends a Close frame and waits
(briefly) for the server's. docs/remote.md has the details.

The frames are made and read by the ``websockets`` library's sans-I/O
protocol (its C helper masks what the client sends) inside the connection's
own channel: a ``ws://`` socket is driven like any other socket (non-blocking
reads and writes with readiness waits, see ``FdChannel``), a ``wss://`` one
through an anyio TLS stream. Either way there is no task of the transport's
own between the socket and the connection: what the connection writes is
framed and handed to the socket in the same call, every frame of one write
in one system call, and one read returns every message that arrived.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ..._io.backend import Backend
from ..._io.channel import Channel, ChannelError
from ..._io.fd import FdChannel
from ..._io.stream import StreamChannel
from ..base import Transport
from .wire import CONNECTION_HEADER

if TYPE_CHECKING:
    import ssl

__all__ = ("WebSocketError", "WebSocketTransport")


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
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri

        parts = urlsplit(self.url)
        secure = parts.scheme == "wss"
        host = parts.hostname or "localhost"
        port = parts.port or (443 if secure else 80)
        protocol = ClientProtocol(parse_uri(self.url), max_size=self.max_message_bytes)
        channel: _SocketFrames | _StreamFrames
        with anyio.fail_after(self.connect_timeout):
            if secure:
                context = self.ssl_context
                if context is None:
                    import ssl

                    context = ssl.create_default_context()
                stream = await anyio.connect_tcp(
                    host, port, ssl_context=context, tls_standard_compatible=False
                )
                channel = _StreamFrames(backend, stream, stream)
            else:
                from ..sockets import _connect_one

                sock = await _connect_tcp(backend, host, port, _connect_one)
                fd = sock.detach()
                channel = _SocketFrames(backend, fd, fd, close_fds=True)
            try:
                channel._start(protocol, self.max_message_bytes)
                self.connection_id = await channel._handshake(self._request(protocol))
            except BaseException:
                await channel.aclose()
                raise
        try:
            yield channel
        finally:
            try:
                with anyio.move_on_after(1, shield=True):
                    await channel._close_handshake()
            finally:
                await channel.aclose()

    def _request(self, protocol: Any) -> Any:
        request = protocol.connect()
        for name, value in self.headers.items():
            if name.lower() == "host":
                del request.headers["Host"]  # given explicitly: replaces the URL's
            request.headers[name] = value
        return request

    def __repr__(self) -> str:
        return f"WebSocketTransport({self.url!r})"


async def _connect_tcp(backend: Backend, host: str, port: int, connect_one: Any) -> socket.socket:
    error: OSError | None = None
    for family, _, _, _, address in await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        try:
            sock: socket.socket = await connect_one(backend, family, address)
            return sock
        except OSError as exc:
            error = exc
    assert error is not None
    raise error


class _Frames(Channel):
    """WebSocket framing over the byte channel that follows it in the MRO.

    ``write`` takes newline-framed messages (as every channel does) and
    writes one text frame per message; ``receive`` returns the messages of
    every complete text frame that arrived, each followed by a newline.
    Pings are answered and a Close from the server is echoed by the
    protocol itself; its answers leave with the next write to the socket.
    """

    _ws: Any
    _events: list[Any]
    _partial: bytes
    _fragments: list[bytes]
    _skipping: bool
    _closed_by_server: bool
    _limit: int

    def _start(self, protocol: Any, limit: int) -> None:
        self._ws = protocol
        self._events = []
        self._partial = b""  # the start of a message whose newline is to come
        self._fragments = []  # a text message arriving in several frames
        self._skipping = False  # ... or a binary one, which carries nothing
        self._closed_by_server = False
        self._limit = limit

    # -- the handshake -------------------------------------------------------

    async def _handshake(self, request: Any) -> str | None:
        from websockets.exceptions import InvalidStatus
        from websockets.http11 import Response

        ws = self._ws
        ws.send_request(request)
        super().write(b"".join(ws.data_to_send()))
        await self._push()
        while True:
            data = await super().receive()
            if data:
                ws.receive_data(data)
            else:
                ws.receive_eof()
            events = ws.events_received()
            for index, event in enumerate(events):
                if not isinstance(event, Response):
                    continue
                failure = ws.handshake_exc
                if failure is not None:
                    if isinstance(failure, InvalidStatus):
                        status = failure.response.status_code
                        text = failure.response.body.decode(errors="replace")[:200]
                        raise WebSocketError(
                            f"WebSocket refused: HTTP {status} {text}".strip(), status
                        )
                    raise WebSocketError(f"WebSocket handshake failed: {failure}")
                self._events = events[index + 1 :]  # frames that came with it
                value = event.headers.get(CONNECTION_HEADER)
                return str(value) if value is not None else None
            if not data:
                failure = ws.handshake_exc
                raise WebSocketError(
                    f"WebSocket handshake failed: {failure or 'the server closed the connection'}"
                )

    # -- writing ---------------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._partial:
            data = self._partial + data
            self._partial = b""
        end = data.rfind(b"\n")
        if end != len(data) - 1:
            self._partial = bytes(data[end + 1 :])
            if end < 0:
                return
        ws = self._ws
        try:
            if end == data.find(b"\n"):
                ws.send_text(data[:end])  # the usual case: one message
            else:
                for line in data[:end].split(b"\n"):
                    if line:
                        ws.send_text(line)
        except Exception as exc:  # the protocol is closing: InvalidState
            raise ChannelError(f"write failed: the WebSocket is closing ({exc})") from exc
        frames = ws.data_to_send()
        super().write(frames[0] if len(frames) == 1 else b"".join(frames))

    async def _push(self) -> None:
        """Hand everything held to the socket (when no ``run()`` task runs)."""
        raise NotImplementedError

    # -- reading ---------------------------------------------------------------

    async def receive(self) -> bytes:
        ws = self._ws
        while True:
            if self._events:
                messages = self._take_events()
                if messages:
                    return messages
            if self._closed_by_server:
                return b""  # the server closed its side: EOF
            failure = ws.parser_exc
            if failure is not None:
                from websockets.exceptions import PayloadTooBig

                if isinstance(failure, PayloadTooBig):
                    raise ChannelError(f"a WebSocket message exceeds {self._limit} bytes")
                raise ChannelError(f"the WebSocket failed: {failure!r}")
            data = await super().receive()
            if not data:
                ws.receive_eof()
                raise ChannelError("the WebSocket connection was lost")
            ws.receive_data(data)
            self._events = ws.events_received()
            answers = ws.data_to_send()
            if answers:  # pongs, the echo of a Close, a Close for an error
                self._queue(b"".join(answers))

    def _take_events(self) -> bytes:
        from websockets.frames import Opcode

        messages: list[bytes] = []
        events, self._events = self._events, []
        for frame in events:
            opcode = frame.opcode
            if opcode is Opcode.TEXT:
                if frame.fin:
                    messages.append(frame.data)
                else:
                    self._fragments = [frame.data]
            elif opcode is Opcode.CONT:
                if not self._skipping:
                    self._fragments.append(frame.data)
                    if frame.fin:
                        messages.append(b"".join(self._fragments))
                        self._fragments = []
                if frame.fin:
                    self._skipping = False
            elif opcode is Opcode.BINARY:
                self._skipping = not frame.fin  # binary frames carry nothing here
            elif opcode is Opcode.CLOSE:
                self._closed_by_server = True
                break
        if not messages:
            return b""
        for index, message in enumerate(messages):
            if b"\n" in message or b"\r" in message:
                # One message per line: a pretty-printed message's newlines
                # are only whitespace (a raw newline inside a JSON string is
                # invalid anyway).
                messages[index] = message.replace(b"\r", b" ").replace(b"\n", b" ")
        messages.append(b"")
        return b"\n".join(messages)

    # -- closing ----------------------------------------------------------------

    def _queue(self, data: bytes) -> None:
        """Send control frames, even once the connection's output ended."""
        if self._write_closed or self._held or self._failure is not None:
            if self._failure is None:
                self._held.append(data)
                self._held_size += len(data)
                self._wake_writer()
        else:
            super().write(data)

    def _end_output(self) -> None:
        # A WebSocket ends with a Close frame, not with a half-closed socket.
        from websockets.protocol import State

        ws = self._ws
        if ws.state is State.OPEN:
            ws.send_close(1000)
            self._queue(b"".join(ws.data_to_send()))

    async def _close_handshake(self) -> None:
        """Send what is held and a Close; wait for the server's Close."""
        try:
            self._end_output()
            await self._push()
            while not self._closed_by_server and self._failure is None:
                await self.receive()  # late messages are dropped
        except (ChannelError, OSError, anyio.BrokenResourceError):
            pass


class _SocketFrames(_Frames, FdChannel):
    """``ws://``: frames over a non-blocking socket."""

    async def _push(self) -> None:
        while self._held:
            data = self._held[0]
            written = self._write_now(data)
            self._held_size -= written
            if written == len(data):
                self._held.popleft()
            else:
                self._held[0] = memoryview(data)[written:]
                await self._wait_writable()


class _StreamFrames(_Frames, StreamChannel):
    """``wss://``: frames over an anyio TLS stream."""

    async def _send_eof(self) -> None:
        self._end_output()
        await self._push()

    async def _push(self) -> None:
        if self._held:
            data = b"".join(self._held)
            self._held.clear()
            self._held_size = 0
            await self._send_stream.send(data)
