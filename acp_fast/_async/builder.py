"""Connection builders: handlers and callbacks in, a running connection out.

``role.builder()`` returns a Builder. Its ``on_*`` methods register handlers
(each returns the builder, so calls chain; each also works as a decorator when
given only a message class, a method name, or nothing). Three terminals run
the connection:

* ``await builder.connect_to(transport)`` serves until the peer's output
  ends, runs the EOF sequence, flushes every queued answer, and returns
  (reactive endpoints: agents, proxies);
* ``await builder.connect_with(transport, main)`` runs ``main(cx)`` while the
  connection serves, and returns its value (EOF does not stop ``main``);
* ``async with builder.connect(transport) as cx:`` is ``connect_with`` as a
  block.

When the connection fails (a spawned task or a result callback raised, an
``on_close`` callback failed, the transport broke), the terminal raises that
error. When ``main`` or the block ends, background work is cancelled and any
request still pending fails with "never received".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import anyio

from .._core._framing_py import DEFAULT_MAX_LINE
from .._errors import Error
from .._io.backend import current_backend
from .._io.transport import Transport
from .connection import ConnectionTo
from .handlers import (
    DISPATCH,
    NOTIFICATION,
    REQUEST,
    HandlerEntry,
    PeerStyle,
    as_async,
    peer_style_for,
)
from .observe import Observer, Tap
from .trace import HopRecorder, TraceSink, TraceWriter

if TYPE_CHECKING:
    from .roles import Role

__all__ = ("Builder",)

R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# How long leaving ``connect``/``connect_with`` waits for queued output to
# reach the transport before it gives up on it.
DRAIN_TIMEOUT = 5.0


class Builder(Generic[R]):
    """Configures a connection for one role; see the module docstring."""

    def __init__(self, role: Role) -> None:
        self._role = role
        self._handlers: list[HandlerEntry] = []
        self._close_callbacks: list[Callable[[], Awaitable[object]]] = []
        self._runners: list[Callable[..., Awaitable[object]]] = []
        self._name: str | None = None
        self._max_message_size = DEFAULT_MAX_LINE
        self._observers: list[Callable[[], Observer]] = []

    @property
    def role(self) -> Role:
        return self._role

    def name(self, name: str) -> Builder[R]:
        """A name for logs and reprs."""
        self._name = name
        return self

    def max_message_size(self, size: int) -> Builder[R]:
        """Refuse incoming messages larger than ``size`` bytes (default 64 MiB).

        An oversized message is answered with an error (or fails the request it
        answers); the connection goes on with the next message.
        """
        if size < 1:
            raise ValueError("size must be positive")
        self._max_message_size = size
        return self

    def observe(self, observer: Observer | Callable[[], Observer]) -> Builder[R]:
        """Tell ``observer`` about every message and request of the
        connection (see ``acp.Observer``, docs/tracing.md).

        Given a callable instead, each connection the builder makes calls it
        for an observer of its own.
        """
        if isinstance(observer, Observer):
            self._observers.append(lambda: observer)
        else:
            self._observers.append(observer)
        return self

    def trace(self, sink: TraceSink) -> Builder[R]:
        """Record every message of each connection made by this builder.

        ``sink`` is a path (an NDJSON file of docs/tracing.md, truncated at
        the start of each connection) or a callable given each event as a
        dict. Recording never blocks the connection: a file is written by a
        thread, and messages beyond a bounded queue are dropped and counted
        in the summary line.
        """
        local, peer = _ends_of(self._role)
        name = self._name

        def recorder() -> Observer:
            writer = TraceWriter(sink)
            return HopRecorder(writer, name or f"{local}-{peer}", local, peer, owns_writer=True)

        self._observers.append(recorder)
        return self

    # -- handlers ------------------------------------------------------------

    # A class is callable too: the decorator form must come first.
    @overload
    def on_receive_request(  # type: ignore[overload-overlap]
        self, handler: type | str | None = None, *, peer: Any = None
    ) -> Callable[[F], F]: ...

    @overload
    def on_receive_request(
        self,
        handler: Callable[..., Any],
        message_type: type | str | None = None,
        *,
        peer: Any = None,
    ) -> Builder[R]: ...

    def on_receive_request(
        self, handler: Any = None, message_type: Any = None, *, peer: Any = None
    ) -> Any:
        """Handle requests: ``async def handler(request, responder, cx)``.

        ``message_type`` is a schema class (the handler gets that class,
        decoded; bad params are answered -32602), a method name, or None for
        every request (the handler gets ``acp.UntypedMessage``). Return
        ``acp.NOT_HANDLED`` (or an ``acp.NotHandled``) to pass it on.
        """
        return self._register(REQUEST, handler, message_type, peer)

    # A class is callable too: the decorator form must come first.
    @overload
    def on_receive_notification(  # type: ignore[overload-overlap]
        self, handler: type | str | None = None, *, peer: Any = None
    ) -> Callable[[F], F]: ...

    @overload
    def on_receive_notification(
        self,
        handler: Callable[..., Any],
        message_type: type | str | None = None,
        *,
        peer: Any = None,
    ) -> Builder[R]: ...

    def on_receive_notification(
        self, handler: Any = None, message_type: Any = None, *, peer: Any = None
    ) -> Any:
        """Handle notifications: ``async def handler(notification, cx)``."""
        return self._register(NOTIFICATION, handler, message_type, peer)

    # A class is callable too: the decorator form must come first.
    @overload
    def on_receive_dispatch(  # type: ignore[overload-overlap]
        self, handler: type | str | None = None, *, peer: Any = None
    ) -> Callable[[F], F]: ...

    @overload
    def on_receive_dispatch(
        self,
        handler: Callable[..., Any],
        message_type: type | str | None = None,
        *,
        peer: Any = None,
    ) -> Builder[R]: ...

    def on_receive_dispatch(
        self, handler: Any = None, message_type: Any = None, *, peer: Any = None
    ) -> Any:
        """Handle every kind of entry: ``async def handler(dispatch, cx)``.

        ``dispatch`` is an ``acp.RequestDispatch``, ``acp.NotificationDispatch``
        or ``acp.ResponseDispatch`` (responses to our own requests pass here
        before they reach their awaiter).
        """
        return self._register(DISPATCH, handler, message_type, peer)

    def _register(self, kind: int, handler: Any, message_type: Any, peer: Any) -> Any:
        style = PeerStyle.COUNTERPART if peer is None else peer_style_for(self._role, peer)
        if handler is None or isinstance(handler, type | str):
            chosen = handler if message_type is None else message_type

            def decorate(function: F) -> F:
                self._handlers.append(HandlerEntry.create(kind, as_async(function), chosen, style))
                return function

            return decorate
        self._handlers.append(HandlerEntry.create(kind, as_async(handler), message_type, style))
        return self

    def with_handler(self, handler: HandlerEntry) -> Builder[R]:
        """Add a prepared ``acp.HandlerEntry`` (see ``HandlerEntry.create``)."""
        self._handlers.append(handler)
        return self

    def with_connection_builder(self, other: Builder[Any]) -> Builder[R]:
        """Append another builder's handlers, runners and close callbacks."""
        self._handlers.extend(other._handlers)
        self._observers.extend(other._observers)
        self._runners.extend(other._runners)
        self._close_callbacks.extend(other._close_callbacks)
        return self

    # -- lifecycle callbacks ------------------------------------------------

    def on_close(self, callback: Callable[[], Any]) -> Builder[R]:
        """Run ``callback()`` when the peer's output ends (after pending
        requests failed). Callbacks run in order; if one raises, the
        connection fails with the first such error."""
        self._close_callbacks.append(as_async(callback))
        return self

    def with_spawned(
        self, function: Callable[[ConnectionTo[Any]], Awaitable[object]]
    ) -> Builder[R]:
        """Run ``function(cx)`` for the connection's lifetime; an error fails it."""
        self._runners.append(function)
        return self

    # -- terminals -------------------------------------------------------------

    def connect(self, transport: Transport) -> _Connecting[R]:
        """``async with builder.connect(transport) as cx:`` — see the module."""
        return _Connecting(self, transport, reactive=False)

    async def connect_with(
        self, transport: Transport, main: Callable[[ConnectionTo[R]], Awaitable[T]]
    ) -> T:
        """Run ``main(cx)`` while the connection serves; return its value."""
        async with _Connecting(self, transport, reactive=False) as cx:
            return await main(cx)

    async def connect_to(self, transport: Transport) -> None:
        """Serve until the peer's output ends; flush the answers; return."""
        async with _Connecting(self, transport, reactive=True) as cx:
            await cx._until_finished()


class _Connecting(Generic[R]):
    """The async context manager behind every terminal."""

    def __init__(self, builder: Builder[R], transport: Transport, *, reactive: bool) -> None:
        self._builder = builder
        self._transport = transport
        self._reactive = reactive
        self._conn: ConnectionTo[R] | None = None
        self._tap: Tap | None = None

    async def __aenter__(self) -> ConnectionTo[R]:
        builder = self._builder
        backend = current_backend()
        self._channel_context = self._transport._open(backend)
        channel = await self._channel_context.__aenter__()
        conn: ConnectionTo[R] = ConnectionTo(
            role=builder._role,
            channel=channel,
            backend=backend,
            handlers=list(builder._handlers),
            close_callbacks=list(builder._close_callbacks),
            name=builder._name,
            max_message_size=builder._max_message_size,
            reactive=self._reactive,
        )
        if builder._observers:
            tap = self._tap = Tap([make() for make in builder._observers])
            if tap.per_message:
                conn._observer = tap
            conn._wire = tap.wire
        self._group = anyio.create_task_group()
        try:
            await self._group.__aenter__()
        except BaseException:
            await self._channel_context.__aexit__(None, None, None)
            raise
        # The block runs in a cancel scope of its own, cancelled when the
        # connection fails. Its exceptions then never pass through the task
        # group, which would wrap them in an ExceptionGroup.
        self._scope = anyio.CancelScope()
        self._scope.__enter__()
        conn._start(self._group, list(builder._runners), self._scope)
        self._conn = conn
        return conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        conn = self._conn
        assert conn is not None
        # True when the block was cancelled because the connection failed.
        # (trio's scopes also return True on a clean exit: only an exception
        # can be suppressed.)
        suppressed = bool(self._scope.__exit__(exc_type, exc, traceback)) and exc is not None
        try:
            await conn._leave_block(exc is None, DRAIN_TIMEOUT)
            await self._group.__aexit__(None, None, None)
        finally:
            conn._shutdown()
            with anyio.CancelScope(shield=True):
                await self._channel_context.__aexit__(None, None, None)
            if self._tap is not None:
                self._tap.close()
        error = conn._take_error()
        if suppressed:
            # The block was cancelled because the connection failed: raise
            # why (returning would re-raise the block's cancellation).
            raise error if error is not None else Error.internal_error("connection stopped")
        if exc is None and error is not None:
            raise error


def _ends_of(role: Role) -> tuple[str, str]:
    """Names of the two ends of a connection of ``role``, for traces."""
    local = type(role).__name__
    peers = {
        "Client": "Agent",
        "Agent": "Client",
        "Proxy": "Conductor",
        "ConductorToProxy": "Proxy",
    }
    if local == "ConductorToProxy":
        return "Conductor", "Proxy"
    return local, peers.get(local, "Peer")
