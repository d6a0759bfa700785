"""An ASGI application serving ACP connections over Streamable HTTP and WebSocket.

One path (``/acp`` by default) carries both: a WebSocket upgrade gets a
connection of its own for the socket's lifetime; over HTTP, a POSTed
``initialize`` creates a connection, later POSTs carry the client's messages
(answered 202), long-lived GETs stream the agent's messages as Server-Sent
Events (one stream for the connection, one per session), and DELETE ends it.
Each connection is served by ``serve(transport)``, typically an agent
builder's ``connect_to``. docs/remote.md describes the protocol and the
security defaults.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import math
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import msgspec

from ..._io.backend import current_backend
from ..base import Transport
from .asgi import (
    Receive,
    Refused,
    Scope,
    Send,
    cancel_on_disconnect,
    encode_headers,
    headers_of,
    refuse_websocket,
    respond,
)
from .channel import MessageChannel, spawn_free_standing
from .connection import (
    LOCAL_HOSTS,
    Connection,
    ServedTransport,
    ServerOptions,
    SocketSink,
)
from .streams import Mailbox
from .wire import (
    CONNECTION_HEADER,
    SESSION_HEADER,
    SESSION_METHODS,
    decode,
    id_key,
    message_session,
)

__all__ = ("LOCAL_HOSTS", "RemoteServer", "ServeConnection", "ServerOptions")

log = logging.getLogger("acp_fast.http")

ServeConnection = Callable[[Transport], Awaitable[None]]


class RemoteServer:
    """The ASGI application (see the module); ``acp_fast.http.AcpApp`` builds one."""

    def __init__(self, serve: ServeConnection, options: ServerOptions | None = None) -> None:
        self.serve = serve
        self.options = options or ServerOptions()
        self.connections: dict[str, Connection] = {}
        if self.options.token is not None and not self.options.token:
            raise ValueError("token must not be empty")

    # -- ASGI ---------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close every connection and wait (briefly) for their agents."""
        connections = list(self.connections.values())
        for conn in connections:
            if isinstance(conn.channel, SocketChannel):
                conn.channel.going_away()
            conn.close()
        with anyio.move_on_after(self.options.close_grace + 1):
            for conn in connections:
                await conn.finished.wait()

    # -- checks shared by HTTP and WebSocket ---------------------------------

    def _relative_path(self, scope: Scope) -> str:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path or "/"

    def _check_host_and_origin(self, headers: dict[str, str]) -> None:
        allowed = self.options.allowed_hosts
        if "*" not in allowed:
            host = headers.get("host", "")
            if host not in allowed and _hostname(host) not in allowed:
                raise Refused(421, "Host not allowed")
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            raise Refused(403, "Origin not allowed")

    def _origin_allowed(self, origin: str) -> bool:
        options = self.options
        return "*" in options.allowed_origins or origin in (
            *options.allowed_origins,
            *options.cors_origins,
        )

    def _check_token(self, headers: dict[str, str]) -> None:
        token = self.options.token
        if token is None:
            return
        given = headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            value.strip().encode(), token.encode()
        ):
            raise Refused(401, "Unauthorized", [("www-authenticate", "Bearer")])

    def _owner(self, scope: Scope, headers: dict[str, str]) -> tuple[str, str]:
        client = scope.get("client") or ("", 0)
        return (str(client[0]), headers.get("authorization", ""))

    def _connection(self, scope: Scope, headers: dict[str, str]) -> Connection:
        connection_id = headers.get(CONNECTION_HEADER)
        if connection_id is None:
            raise Refused(400, "Acp-Connection-Id header required")
        conn = self.connections.get(connection_id)
        # Someone else's connection is as unknown as a made-up id.
        if conn is None or not _same_owner(conn.owner, self._owner(scope, headers)):
            raise Refused(404)
        return conn

    def _cors_headers(self, headers: dict[str, str]) -> list[tuple[str, str]]:
        origin = headers.get("origin")
        if origin is None or origin not in self.options.cors_origins:
            return []
        return [
            ("access-control-allow-origin", origin),
            ("vary", "origin"),
            ("access-control-expose-headers", f"{CONNECTION_HEADER}, {SESSION_HEADER}"),
        ]

    # -- HTTP -----------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        method = scope["method"]
        path = self._relative_path(scope)
        cors: list[tuple[str, str]] = []
        try:
            self._check_host_and_origin(headers)
            cors = self._cors_headers(headers)
            options = self.options
            if options.health_path is not None and path == options.health_path:
                if method not in ("GET", "HEAD"):
                    raise Refused(405, headers=[("allow", "GET, HEAD")])
                await respond(send, 200, b"ok", [("content-type", "text/plain"), *cors])
                return
            if path != options.path:
                raise Refused(404)
            if method == "OPTIONS":
                await self._preflight(send, headers, cors)
                return
            self._check_token(headers)
            if method == "POST":
                await self._post(scope, receive, send, headers, cors)
            elif method == "GET":
                if headers.get("upgrade", "").lower() == "websocket":
                    raise Refused(426, "WebSocket upgrade not supported by this server")
                await self._get(scope, receive, send, headers, cors)
            elif method == "DELETE":
                conn = self._connection(scope, headers)
                conn.close()
                await respond(send, 202, b"", cors)
            else:
                raise Refused(405, headers=[("allow", "GET, POST, DELETE, OPTIONS")])
        except Refused as refused:
            body = refused.text.encode()
            extra = [("content-type", "text/plain")] if body else []
            await respond(send, refused.status, body, [*refused.headers, *extra, *cors])

    async def _preflight(
        self, send: Send, headers: dict[str, str], cors: list[tuple[str, str]]
    ) -> None:
        if not cors:
            raise Refused(403, "CORS not allowed")
        allowed = [
            ("access-control-allow-methods", "GET, POST, DELETE, OPTIONS"),
            (
                "access-control-allow-headers",
                f"content-type, accept, authorization, {CONNECTION_HEADER}, {SESSION_HEADER}",
            ),
            ("access-control-max-age", "600"),
        ]
        await respond(send, 204, b"", [*cors, *allowed])

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> bytes:
        limit = self.options.max_message_bytes
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise Refused(413, f"message larger than {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Refused(400, "client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"message larger than {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        cors: list[tuple[str, str]],
    ) -> None:
        if not headers.get("content-type", "").startswith("application/json"):
            raise Refused(415, "Content-Type must be application/json")
        body = await self._read_body(receive, headers)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(400, "body is not UTF-8") from None
        message = decode(body)
        if isinstance(message, list):
            raise Refused(501, "batches are not supported")
        if isinstance(message, dict) and message.get("method") == "initialize":
            if CONNECTION_HEADER in headers:
                raise Refused(400, "initialize starts a new connection: no Acp-Connection-Id")
            if "id" not in message:
                raise Refused(400, "initialize must be a request")
            await self._initialize(scope, send, headers, message, body, cors)
            return
        conn = self._connection(scope, headers)
        conn.touch()
        if isinstance(message, dict):
            body = self._scope_to_session(conn, headers, message, body)
        # Malformed JSON is the agent's to answer (on the connection stream).
        await conn.channel.put(body)
        await respond(send, 202, b"", cors)

    def _scope_to_session(
        self, conn: Connection, headers: dict[str, str], message: dict[str, Any], body: bytes
    ) -> bytes:
        method = message.get("method")
        if not isinstance(method, str):
            return body  # a response: its route was recorded by its request
        header = headers.get(SESSION_HEADER)
        params = message.get("params")
        if not method.startswith("$/") and header is not None:
            if params is None:
                params = message["params"] = {}
            if not isinstance(params, dict):
                raise Refused(400, "Acp-Session-Id given with non-object params")
            given = params.get("sessionId")
            if given is None:
                params["sessionId"] = header
                body = msgspec.json.encode(message)
            elif given != header:
                raise Refused(400, "Acp-Session-Id does not match params.sessionId")
        if method in SESSION_METHODS:
            session = params.get("sessionId") if isinstance(params, dict) else None
            if session is None:
                raise Refused(400, "Acp-Session-Id header required")
            if not isinstance(session, str):
                raise Refused(400, "params.sessionId must be a string")
        if "id" in message:
            conn.routes[id_key(message["id"])] = message_session(message)
        return body

    async def _initialize(
        self,
        scope: Scope,
        send: Send,
        headers: dict[str, str],
        message: dict[str, Any],
        body: bytes,
        cors: list[tuple[str, str]],
    ) -> None:
        conn = self._open_connection(scope, headers)
        conn.init_id = id_key(message["id"])
        conn.init_waiter = conn.backend.new_waiter()
        waiter = conn.init_waiter
        conn.channel.put_nowait(body)
        conn.task = spawn_free_standing(
            conn.backend, lambda: self._run_http(conn), "acp_fast http connection"
        )
        await waiter.wait()
        reply = conn.init_reply
        if reply is None:
            raise Refused(500, "the agent ended before answering initialize")
        answer = decode(reply)
        if isinstance(answer, dict) and "error" in answer:
            conn.close()
            await respond(send, 200, reply, [("content-type", "application/json"), *cors])
            return
        conn.touch()
        response_headers = [
            ("content-type", "application/json"),
            (CONNECTION_HEADER, conn.id),
            *cors,
        ]
        await respond(send, 200, reply, response_headers)

    def _open_connection(self, scope: Scope, headers: dict[str, str]) -> Connection:
        conn = Connection(
            self.options, self.connections, current_backend(), self._owner(scope, headers)
        )
        self.connections[conn.id] = conn
        return conn

    async def _run_http(self, conn: Connection) -> None:
        try:
            with conn.scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._watch, conn, group.cancel_scope)
                    await self._serve(conn)
                    group.cancel_scope.cancel()
        finally:
            self._finish(conn)

    async def _serve(self, conn: Connection) -> bool:
        """Run the connection's agent; False when it failed (logged)."""
        try:
            await self.serve(ServedTransport(conn.channel))
        except Exception:
            log.exception("an ACP connection failed")
            return False
        return True

    async def _watch(self, conn: Connection, serving: anyio.CancelScope) -> None:
        """Close the connection when idle; stop its agent once closed."""
        timeout = self.options.idle_timeout
        while not conn.closing.is_set():
            idle = time.monotonic() - conn.last_active
            left = timeout - idle
            if any(m.subscribed for m in conn.streams.values()):
                left = timeout  # someone is listening: not idle
                conn.touch()
            if left <= 0:
                log.info("closing idle ACP connection")
                conn.close()
                break
            with anyio.move_on_after(min(left, timeout) if math.isfinite(left) else None):
                await conn.closing.wait()
        await anyio.sleep(self.options.close_grace)
        serving.cancel()

    def _finish(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)
        conn.channel.end_input()
        for mailbox in conn.streams.values():
            mailbox.end()
        if conn.init_waiter is not None:
            conn.settle_init(None)
        conn.finished.set()

    async def _get(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: dict[str, str],
        cors: list[tuple[str, str]],
    ) -> None:
        if "text/event-stream" not in headers.get("accept", ""):
            raise Refused(406, "Accept must include text/event-stream")
        conn = self._connection(scope, headers)
        session = headers.get(SESSION_HEADER)
        sessions = len(conn.streams) - (None in conn.streams)
        if session not in conn.streams and sessions >= self.options.max_session_streams:
            raise Refused(429, "too many session streams")
        mailbox = conn.stream(session)
        if mailbox.subscribed:
            raise Refused(409, "outbound stream already has a subscriber")
        mailbox.subscribed = True
        conn.touch()
        echo = [(CONNECTION_HEADER, conn.id)]
        if session is not None:
            echo.append((SESSION_HEADER, session))
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": encode_headers(
                        [
                            ("content-type", "text/event-stream"),
                            ("cache-control", "no-cache"),
                            ("x-accel-buffering", "no"),
                            *echo,
                            *cors,
                        ]
                    ),
                }
            )
            async with anyio.create_task_group() as group:
                group.start_soon(cancel_on_disconnect, receive, group.cancel_scope)
                await self._stream(send, mailbox)
                group.cancel_scope.cancel()
        finally:
            mailbox.subscribed = False
            conn.touch()
            if session is not None and not mailbox.items and not mailbox.ended:
                # Nothing waits in it: forget it (a later message recreates it),
                # so streams opened for made-up sessions cost nothing.
                conn.streams.pop(session, None)
        try:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass

    async def _stream(self, send: Send, mailbox: Mailbox) -> None:
        interval = self.options.keepalive_interval
        while True:
            items: list[bytes] | None = []
            with anyio.move_on_after(interval):
                items = await mailbox.take()
            if items is None:
                return
            body = b"".join(items) if items else b": keep-alive\n\n"
            await send({"type": "http.response.body", "body": body, "more_body": True})

    # -- WebSocket --------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = headers_of(scope)
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        try:
            self._check_host_and_origin(headers)
            if self._relative_path(scope) != self.options.path:
                raise Refused(404)
            self._check_token(headers)
        except Refused as refused:
            await refuse_websocket(scope, send, refused)
            return
        backend = current_backend()
        mailbox = Mailbox(backend, self.options.max_buffered_bytes)
        channel = SocketChannel(
            backend, SocketSink(mailbox), receive, self.options.max_message_bytes
        )
        conn = Connection(
            self.options,
            self.connections,
            backend,
            self._owner(scope, headers),
            channel=channel,
        )
        channel.connection = conn
        await send(
            {
                "type": "websocket.accept",
                "headers": encode_headers([(CONNECTION_HEADER, conn.id)]),
            }
        )
        self.connections[conn.id] = conn
        try:
            async with anyio.create_task_group() as group:
                agent_scope = anyio.CancelScope()
                group.start_soon(self._run_socket_agent, conn, agent_scope)
                group.start_soon(self._socket_grace, conn, agent_scope)
                await _socket_sender(send, mailbox, channel)
                with anyio.move_on_after(self.options.close_grace):
                    await conn.finished.wait()
                group.cancel_scope.cancel()
        finally:
            self._finish(conn)

    async def _run_socket_agent(self, conn: Connection, scope: anyio.CancelScope) -> None:
        served = True
        with scope:  # cancelled when it outlives its grace (_socket_grace)
            served = await self._serve(conn)
        conn.finished.set()
        channel = conn.channel
        assert isinstance(channel, SocketChannel)
        if not served:
            channel.close_code = 1011  # RFC 6455 §7.4.1: an unexpected condition
        # The agent is gone, even one that failed before it used its
        # transport: the socket's output ends and the client gets a Close
        # frame (docs/remote.md).
        await channel.aclose()

    async def _socket_grace(self, conn: Connection, agent: anyio.CancelScope) -> None:
        """Once the client left (or the server closes), give the agent time to
        end, then stop it. Only the agent: what it wrote still goes out, then
        the Close frame (the sender ends with its output). A read waiting on
        the ASGI server wakes only for the client's Close or its leaving, so
        an agent waiting for input when the server stops is stopped here."""
        await conn.closing.wait()
        with anyio.move_on_after(self.options.close_grace):
            await conn.finished.wait()
        agent.cancel()


class SocketChannel(MessageChannel):
    """A WebSocket connection's end for its agent.

    Its agent reads the socket itself: ``receive()`` awaits the ASGI
    server's next event, so a message costs no task of ours between the
    server and the agent. The agent's output goes to the socket's mailbox,
    which ``_socket_sender`` sends one frame per message (ASGI sends one
    frame per ``websocket.send``).

    On asyncio one ``receive()`` returns every message the server already
    holds, as a read of a byte stream returns every line that arrived: once
    a message is in, the next ``receive`` event is asked for at once, and if
    it has to wait, that wait (an asyncio future, which belongs to no task)
    is kept and awaited by the next ``receive()``. The agent then handles a
    batch of messages per read, and answers it in one write, as over stdio.
    """

    def __init__(self, backend: Any, sink: SocketSink, receive: Receive, limit: int) -> None:
        super().__init__(backend, sink)
        self._asgi_receive = receive
        self._limit = limit
        self.connection: Connection | None = None
        self.close_code = 1000  # what the Close frame says once the output ends
        self._gather = backend.name == "asyncio"
        self._ahead: Any = None  # the next event's receive, started and waiting
        self._ahead_wait: Any = None  # ... what it waits for

    async def receive(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while not self._input_ended:
            ahead = self._ahead
            if ahead is not None:
                self._ahead = None
                message = await _Resumed(ahead, self._ahead_wait)
            elif parts:
                # Ask for the next event; keep it for later if it has to wait.
                ahead = self._asgi_receive().__await__()
                try:
                    wait = next(ahead)
                except StopIteration as done:
                    message = done.value
                else:
                    self._ahead, self._ahead_wait = ahead, wait
                    break
            else:
                message = await self._asgi_receive()
            kind = message["type"]
            if kind == "websocket.receive":
                text = message.get("text")
                if text is None:
                    continue  # binary frames carry nothing in this protocol
                data: bytes = text.encode()
                if len(data) > self._limit:
                    self.close_code = 1009
                    self._client_gone()
                    break
                if b"\n" in data or b"\r" in data:
                    # One message per line (see MessageChannel.put_nowait).
                    data = data.replace(b"\r", b" ").replace(b"\n", b" ")
                parts.append(data)
                size += len(data)
                if not self._gather or size >= _GATHER_BYTES:
                    break
            elif kind == "websocket.disconnect":
                self._client_gone()
        if parts:
            parts.append(b"")
            return b"\n".join(parts)
        return await super().receive()  # EOF, or the failure that ended the input

    def going_away(self) -> None:
        """The server stops: the Close frame the client gets once the agent's
        output ends says 1001 (going away, RFC 6455 §7.4.1)."""
        self.close_code = 1001

    def _client_gone(self) -> None:
        if self.connection is not None:
            self.connection.close()
        else:  # pragma: no cover - set right after the connection is made
            self.end_input()

    async def aclose(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.close()
        await super().aclose()


# One receive() gathers messages up to about this many bytes.
_GATHER_BYTES = 64 * 1024


class _Resumed:
    """Awaits a coroutine that already yielded ``wait`` once (see SocketChannel)."""

    __slots__ = ("_coroutine", "_wait")

    def __init__(self, coroutine: Any, wait: Any) -> None:
        self._coroutine = coroutine
        self._wait = wait

    def __await__(self) -> Any:
        coroutine, wait = self._coroutine, self._wait
        while True:
            if wait is not None and wait.done():
                step, value = coroutine.send, None  # no loop iteration for a settled wait
            else:
                try:
                    value = yield wait
                except GeneratorExit:
                    coroutine.close()
                    raise
                except BaseException as exc:
                    step, value = coroutine.throw, exc
                else:
                    step = coroutine.send
            try:
                wait = step(value)
            except StopIteration as done:
                return done.value


async def _socket_sender(send: Send, mailbox: Mailbox, channel: SocketChannel) -> None:
    transport = _transport_behind(send)
    closing = _closing_probe(transport)
    cork = _corker(transport)
    try:
        unchecked = 0  # frames sent since the loop last ran
        while True:
            if not mailbox.items:
                unchecked = 0  # take() waits: the loop runs meanwhile
            items = await mailbox.take()
            if items is None:
                break
            batch_cork = cork if len(items) > 1 else None
            if batch_cork is not None:
                batch_cork(True)
            try:
                for item in items:
                    if closing is not None:
                        if closing():
                            raise ConnectionResetError("the client's socket is closing")
                    elif unchecked == _SENDS_PER_CHECKPOINT:
                        await anyio.lowlevel.checkpoint()
                        unchecked = 0
                    await send({"type": "websocket.send", "text": item.decode()})
                    unchecked += 1
            finally:
                if batch_cork is not None:
                    # Also when the batch broke off: what was written leaves now.
                    with contextlib.suppress(OSError):
                        batch_cork(False)
        await send({"type": "websocket.close", "code": channel.close_code})
    except OSError:
        mailbox.close()  # the client is gone: the agent's writes fail


# A socket's write that fails (the client dropped it) tells the ASGI server
# only in a callback the loop runs later; until then its send() writes on,
# and asyncio logs "socket.send() raised exception." from the fifth write to
# a lost socket. Where the server's send() belongs to a protocol holding an
# asyncio transport (uvicorn's), the transport says at once that it is
# closing, and the sender stops there; elsewhere it lets the loop run every
# 4 frames, so the server sees the loss before that (docs/remote.md).
_SENDS_PER_CHECKPOINT = 4


def _transport_behind(send: Send) -> Any:
    """The transport of the protocol whose method ``send`` is (uvicorn's), or None."""
    return getattr(getattr(send, "__self__", None), "transport", None)


def _closing_probe(transport: Any) -> Callable[[], bool] | None:
    """The transport's ``is_closing``, when it has one."""
    is_closing = getattr(transport, "is_closing", None)
    return is_closing if callable(is_closing) else None


# ASGI sends one frame per ``websocket.send``, and the server writes each at
# once: with TCP_NODELAY (asyncio's default) that is one TCP segment per
# message, and on loopback the sending call also delivers it. Corked while a
# batch of messages is sent, the frames leave as a few full segments when the
# cork comes off, right after the batch (one fifth more WebSocket round trips
# at 64 in flight, docs/remote.md, "Performance"). Linux only.
_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)


def _corker(transport: Any) -> Callable[[bool], None] | None:
    """Turns TCP_CORK on and off on the transport's TCP socket, when it has one."""
    get_extra_info = getattr(transport, "get_extra_info", None)
    if _TCP_CORK is None or not callable(get_extra_info):
        return None
    sock = get_extra_info("socket")
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
        return None
    setsockopt = sock.setsockopt
    option = _TCP_CORK
    try:  # tried once: not every kind of TCP socket takes it
        setsockopt(socket.IPPROTO_TCP, option, 0)
    except (OSError, ValueError):
        return None

    def cork(on: bool) -> None:
        try:
            setsockopt(socket.IPPROTO_TCP, option, 1 if on else 0)
        except ValueError:  # uvloop's socket of a transport that closed meanwhile
            raise ConnectionResetError("the client's socket is closed") from None

    return cork


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_owner(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0] == b[0] and hmac.compare_digest(a[1].encode(), b[1].encode())
