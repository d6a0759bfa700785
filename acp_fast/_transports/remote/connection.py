"""The server's state for one client connection, and where its output goes.

A ``Connection`` holds the agent's end (a ``MessageChannel``), its streams
(one ``Mailbox`` per SSE stream, or one for a socket) and the routing state
of Streamable HTTP: which session each request belonged to, so its response
goes back where the client listens. docs/remote.md describes the routing.
"""

from __future__ import annotations

import numbers
import secrets
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from ..._io.backend import Backend, Waiter
from ..base import Transport
from .channel import MessageChannel, MessageSink
from .streams import Mailbox
from .wire import decode, id_key, is_response, message_session, sse_event

__all__ = ("LOCAL_HOSTS", "Connection", "Router", "ServedTransport", "ServerOptions", "SocketSink")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


@dataclass
class ServerOptions:
    """What ``AcpApp`` accepts and how long it keeps things (docs/remote.md)."""

    path: str = "/acp"
    health_path: str | None = "/health"
    # Host header names (with or without port) accepted; "*" accepts any.
    allowed_hosts: Sequence[str] = LOCAL_HOSTS
    # Origin header values accepted (requests without Origin always are).
    allowed_origins: Sequence[str] = ()
    # Origins granted CORS (they are allowed origins too); none by default.
    cors_origins: Sequence[str] = ()
    # Required ``Authorization: Bearer <token>``, when set.
    token: str | None = None
    max_message_bytes: int = 16 * 1024 * 1024
    # Per SSE stream / socket: what the agent may send ahead of the reader.
    max_buffered_bytes: int = 1024 * 1024
    # Session streams a client may open on one connection.
    max_session_streams: int = 256
    # An HTTP connection nobody used for this long is closed.
    idle_timeout: float = 300.0
    keepalive_interval: float | None = 15.0  # None: no keep-alives
    # After DELETE (or a socket's close) the agent gets this long to finish.
    close_grace: float = 2.0

    def __post_init__(self) -> None:
        # Checked here, not when the first request finds a path that never
        # matches or a connection that expires at once.
        for name in ("path", "health_path"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and value.startswith("/")):
                raise ValueError(
                    f"ServerOptions.{name} must start with '/', not {value!r}"
                    + (" (None turns it off)" if name == "health_path" else "")
                )
        for name, least in (
            ("max_message_bytes", 1),
            ("max_buffered_bytes", 0),  # 0: one message ahead of the reader at a time
            ("max_session_streams", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
                raise ValueError(f"ServerOptions.{name} must be an int >= {least}, not {value!r}")
        for name in ("idle_timeout", "keepalive_interval", "close_grace"):
            value = getattr(self, name)
            if value is None and name == "keepalive_interval":
                continue  # no keep-alive comments on SSE streams
            # NaN fails both comparisons; close_grace may be 0 (no grace).
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not (float(value) >= 0 if name == "close_grace" else float(value) > 0)
            ):
                raise ValueError(
                    f"ServerOptions.{name} must be a positive number of seconds, not {value!r}"
                )


class ServedTransport(Transport):
    """The transport an agent is served on: a channel the server already made."""

    def __init__(self, channel: MessageChannel) -> None:
        self.channel = channel

    @asynccontextmanager
    async def _open(self, backend: Backend) -> Any:
        try:
            yield self.channel
        finally:
            await self.channel.aclose()

    def __repr__(self) -> str:
        return "RemoteTransport()"


class Connection:
    """One client's connection: its agent, its streams, its routing state."""

    def __init__(
        self,
        options: ServerOptions,
        registry: dict[str, Connection],
        backend: Backend,
        owner: tuple[str, str],
        sink: MessageSink | None = None,
        channel: MessageChannel | None = None,
    ) -> None:
        self.id = secrets.token_urlsafe(24)  # 192 random bits
        self.owner = owner
        self.options = options
        self.registry = registry  # the server's connections by id
        self.backend = backend
        self.streams: dict[str | None, Mailbox] = {}
        self.routes: dict[tuple[str, Any], str | None] = {}
        self.init_id: tuple[str, Any] | None = None
        self.init_reply: bytes | None = None
        self.init_waiter: Waiter | None = None
        self.last_active = time.monotonic()
        self.closing = anyio.Event()
        self.finished = anyio.Event()
        self.scope = anyio.CancelScope()
        self.task: Any = None  # an asyncio task is only weakly held by its loop
        # Over HTTP the output is sorted into SSE streams; a socket has one.
        if channel is None:
            channel = MessageChannel(backend, sink if sink is not None else Router(self))
        self.channel = channel

    def stream(self, session: str | None) -> Mailbox:
        mailbox = self.streams.get(session)
        if mailbox is None:
            mailbox = self.streams[session] = Mailbox(self.backend, self.options.max_buffered_bytes)
            if self.channel.input_ended and self.finished.is_set():
                mailbox.end()
        return mailbox

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def close(self) -> None:
        """End the client's side: the agent reads EOF, then is stopped."""
        self.registry.pop(self.id, None)  # unknown from now on
        self.channel.end_input()
        self.closing.set()

    def settle_init(self, reply: bytes | None) -> None:
        self.init_reply = reply
        self.init_id = None
        waiter, self.init_waiter = self.init_waiter, None
        if waiter is not None:
            waiter.set()


class Router:
    """Sorts an HTTP connection's output into its SSE streams."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._blocked: Mailbox | None = None

    def offer(self, message: bytes) -> bool:
        conn = self.connection
        value = decode(message)
        if is_response(value):
            key = id_key(value["id"])
            if key == conn.init_id:
                conn.settle_init(message)
                return True
            route = conn.routes.pop(key, None)
        else:
            route = message_session(value)
        mailbox = conn.stream(route)
        if not mailbox.push(sse_event(message)):
            if is_response(value):
                conn.routes[id_key(value["id"])] = route  # offered again later
            self._blocked = mailbox
            return False
        return True

    async def room(self) -> None:
        blocked, self._blocked = self._blocked, None
        if blocked is not None:
            await blocked.room()

    def end(self) -> None:
        for mailbox in self.connection.streams.values():
            mailbox.end()


class SocketSink:
    """A WebSocket connection's output: one mailbox, one frame per message."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    def offer(self, message: bytes) -> bool:
        return self.mailbox.push(message)

    async def room(self) -> None:
        await self.mailbox.room()

    def end(self) -> None:
        self.mailbox.end()
