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

import os
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


# Mask keys are drawn from the system's CSPRNG this many bytes at a time
# (one system call per 1,024 frames, not one per frame).
_MASK_POOL = 4096
# The first two bytes of a masked, final text frame of each length below 126.
_SMALL_HEADS = tuple(bytes((0x81, 0x80 | size)) for size in range(126))


class _Frames(Channel):
    """WebSocket framing over the byte channel that follows it in the MRO.

    ``write`` takes newline-framed messages (as every channel does) and
    writes one text frame per message; ``receive`` returns the messages of
    every complete text frame that arrived, each followed by a newline.

    The frames of the data path, unfragmented text frames, are made and read
    here (a masked frame costs a header, a key from a pool of random bytes
    and websockets' C masking; a frame from the server is a header and a
    slice). Every other frame (pings, Close, fragments, binary frames, and
    anything malformed or too large) is handed whole to websockets' protocol,
    which answers pings, echoes a Close, reassembles fragments and enforces
    the limits; its answers leave with the next write to the socket.
    """

    _ws: Any
    _apply_mask: Any
    _masks: bytes
    _mask_at: int
    _events: list[Any]
    _partial: bytes
    _early: bytes
    _inbox: bytearray
    _state_open: Any
    _need: int
    _fragments: list[bytes]
    _in_fragment: bool
    _skipping: bool
    _closed_by_server: bool
    _limit: int

    def _start(self, protocol: Any, limit: int) -> None:
        from websockets.protocol import State

        try:  # websockets' C helper; its pure-Python fallback is ten times slower
            from websockets.speedups import apply_mask
        except ImportError:  # pragma: no cover - a build without the extension
            from websockets.utils import apply_mask

        self._ws = protocol
        self._state_open = State.OPEN
        self._apply_mask = apply_mask
        self._masks = b""
        self._mask_at = _MASK_POOL
        self._events = []  # frames the protocol parsed, not yet taken
        self._partial = b""  # the start of a message whose newline is to come
        self._early = b""  # what came right after the handshake's answer
        self._inbox = bytearray()  # the start of a frame still arriving
        self._need = 0  # ... and how many bytes make it whole (0: unknown)
        self._fragments = []  # a text message arriving in several frames
        self._in_fragment = False  # ... or any fragmented message
        self._skipping = False  # ... which is binary and carries nothing
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
        head = b""
        in_head = True
        while True:
            data = await super().receive()
            if not data:
                ws.receive_eof()
            elif in_head:
                # Only the response's head goes to the protocol; frames that
                # came right after it are read here, like any later ones.
                head += data
                end = head.find(b"\r\n\r\n")
                if end < 0:
                    continue
                if head.startswith((b"HTTP/1.1 101 ", b"HTTP/1.0 101 ")):
                    self._early = head[end + 4 :]
                    data = head[: end + 4]
                else:
                    data = head  # a refusal: its body is the protocol's too
                in_head = False
                ws.receive_data(data)
            else:
                ws.receive_data(data)
            for event in ws.events_received():
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
        if end != len(data) - 1 or not data:
            self._partial = bytes(data[end + 1 :])
            if end < 0:
                return
        if self._ws.state is not self._state_open:
            raise ChannelError("write failed: the WebSocket is closing")
        if end == data.find(b"\n"):
            if end:  # the usual case: one message
                super().write(self._frame(data[:end]))
        else:
            frame = self._frame
            super().write(b"".join([frame(line) for line in data[:end].split(b"\n") if line]))

    def _frame(self, payload: bytes) -> bytes:
        """One masked text frame (RFC 6455 §5.2, §5.3)."""
        at = self._mask_at
        if at >= _MASK_POOL:
            self._masks = os.urandom(_MASK_POOL)
            at = 0
        mask = self._masks[at : at + 4]
        self._mask_at = at + 4
        size = len(payload)
        if size < 126:
            head = _SMALL_HEADS[size]
        elif size < 65536:
            head = b"\x81\xfe" + size.to_bytes(2, "big")
        else:
            head = b"\x81\xff" + size.to_bytes(8, "big")
        return head + mask + self._apply_mask(payload, mask)  # type: ignore[no-any-return]

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
            if self._early:
                data, self._early = self._early, b""  # frames that came with the 101
            else:
                # A large frame still arriving is read in larger pieces.
                self.read_hint = self._need - len(self._inbox)
                data = await super().receive()
                if not data:
                    # Gone without a Close frame (the server died, the network
                    # dropped): the peer's end, as a process's exit is. Pending
                    # requests fail with acp.Error naming it (docs/remote.md).
                    ws.receive_eof()
                    self.ended_because("the WebSocket connection was lost (no Close frame)")
                    return b""
            messages = self._parse(data)
            answers = ws.data_to_send()
            if answers:  # pongs, the echo of a Close, a Close for an error
                self._queue(b"".join(answers))
            if messages:
                return messages

    def _parse(self, data: bytes) -> bytes:
        """The messages of the complete frames in what arrived so far."""
        inbox = self._inbox
        if inbox:
            inbox += data
            if len(inbox) < self._need:
                return b""
            buffer: bytes | bytearray = inbox
        else:
            buffer = data
        messages: list[bytes] = []
        at = 0
        size = len(buffer)
        limit = self._limit
        while size - at >= 2:
            first = buffer[at]
            length = buffer[at + 1]
            masked = length & 0x80  # from a server: the protocol refuses it
            head = 6 if masked else 2
            length &= 0x7F
            if length == 126:
                if size - at < 4:
                    break
                length = int.from_bytes(buffer[at + 2 : at + 4], "big")
                head += 2
            elif length == 127:
                if size - at < 10:
                    break
                length = int.from_bytes(buffer[at + 2 : at + 10], "big")
                head += 8
            end = at + head + length
            if first == 0x81 and not masked and length <= limit and not self._in_fragment:
                if end > size:
                    break
                messages.append(bytes(buffer[at + head : end]))
            else:
                if end > size and length <= limit:
                    break
                # Any other frame, whole (or the header of one too large):
                # the protocol's to handle.
                self._ws.receive_data(bytes(buffer[at:end]))
                self._events = self._ws.events_received()
                taken = self._take_events()
                if taken:
                    messages.append(taken[:-1])
                if self._closed_by_server or self._ws.parser_exc is not None:
                    at = size
                    break
            at = end
        if at < size:
            rest = buffer[at:]
            self._inbox = rest if isinstance(rest, bytearray) else bytearray(rest)
            self._need = self._frame_size(rest)
        elif inbox:
            self._inbox = bytearray()
            self._need = 0
        if not messages:
            return b""
        return _lines(messages)

    @staticmethod
    def _frame_size(start: bytes | bytearray) -> int:
        """How many bytes the frame starting ``start`` needs (0: unknown yet)."""
        if len(start) < 2:
            return 0
        length = start[1] & 0x7F
        head = 6 if start[1] & 0x80 else 2
        if length == 126:
            return 0 if len(start) < 4 else head + 2 + int.from_bytes(start[2:4], "big")
        if length == 127:
            return 0 if len(start) < 10 else head + 8 + int.from_bytes(start[2:10], "big")
        return head + length

    def _take_events(self) -> bytes:
        from websockets.frames import Opcode

        messages: list[bytes] = []
        events, self._events = self._events, []
        for frame in events:
            opcode = frame.opcode
            if opcode is Opcode.TEXT:
                if frame.fin:
                    messages.append(bytes(frame.data))
                else:
                    self._fragments = [bytes(frame.data)]
                    self._in_fragment = True
            elif opcode is Opcode.CONT:
                if not self._skipping:
                    self._fragments.append(bytes(frame.data))
                    if frame.fin:
                        messages.append(b"".join(self._fragments))
                        self._fragments = []
                if frame.fin:
                    self._skipping = self._in_fragment = False
            elif opcode is Opcode.BINARY:
                # Binary frames carry nothing in this protocol.
                self._skipping = self._in_fragment = not frame.fin
            elif opcode is Opcode.CLOSE:
                self._closed_by_server = True
                self.ended_because(
                    f"the server closed the WebSocket ({_close_said(bytes(frame.data))})"
                )
                break
        return _lines(messages) if messages else b""

    # -- closing ----------------------------------------------------------------

    def _queue(self, data: bytes) -> None:
        """Send control frames, even once the connection's output ended."""
        if self._write_closed or self._held or self._failure is not None:
            if self._failure is None:
                self._held.append(data)
                self.pending += len(data)
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


def _lines(messages: list[bytes]) -> bytes:
    """Messages as newline-framed bytes, one message per line."""
    for index, message in enumerate(messages):
        if b"\n" in message or b"\r" in message:
            # A pretty-printed message's newlines are only whitespace (a raw
            # newline inside a JSON string is invalid anyway).
            messages[index] = message.replace(b"\r", b" ").replace(b"\n", b" ")
    messages.append(b"")
    return b"\n".join(messages)


class _SocketFrames(_Frames, FdChannel):
    """``ws://``: frames over a non-blocking socket."""

    async def _push(self) -> None:
        while self._held:
            data = self._held[0]
            written = self._write_now(data)
            self.pending -= written
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
            self.pending = 0
            await self._send_stream.send(data)


def _close_said(data: bytes) -> str:
    """A Close frame's code and reason, for the requests it fails."""
    from websockets.frames import Close

    try:
        close = Close.parse(data)
    except Exception:  # a malformed Close is still a Close
        return "a malformed Close frame"
    return f"code {close.code}" + (f": {close.reason}" if close.reason else "")
