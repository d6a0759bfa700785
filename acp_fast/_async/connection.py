"""A live JSON-RPC connection: its public API and its lifecycle.

``ConnectionTo`` is built from three layers, each in its own module:

* ``outbox.py``: the outgoing FIFO, flushed once per loop iteration;
* ``dispatch.py``: handler chains, dynamic and parked handlers, the one
  function that calls a handler, and response routing;
* ``inbound.py``: the dispatch loop that reads, frames and classifies.

This module adds what users call (sending, spawning, draining) and the
lifecycle (docs/semantics.md §2.3–2.7). The handles it gives out
(``SentRequest``, ``Responder``, ...) see it only through ``ConnectionPort``
(port.py).

Failures: an exception in a spawned task, a result callback, an ``on_close``
callback or the transport fails the whole connection with that error; the
connection's task group is cancelled and ``connect*`` raises it. A
``BaseException`` that is not a cancellation (KeyboardInterrupt, SystemExit,
...) from a handler or a spawned task stops the connection at once, and
``connect*`` raises it as it is (tests/reliability/test_faults.py).

The EOF sequence (§2.6) is: mark closing (new requests fail at once), fail
every pending request with "Incoming transport closed", run the ``on_close``
callbacks in order (first error kept), mark closed and wake
``incoming_closed()`` waiters, then fail the connection with a close error if
there was one.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import anyio
import msgspec

from .._core import (
    MISSING,
    SETTLED_ERROR,
    SETTLED_LOST,
    OutgoingRequest,
    OversizedLine,
    RequestTable,
    is_valid_id,
)
from .._errors import Error
from .._io.backend import Backend
from .._io.channel import Channel, ChannelError
from . import _wire
from .dispatch import DynamicHandlerGuard, is_abort
from .handlers import HandlerEntry, PeerStyle, peer_style_for
from .inbound import Inbound
from .messages import (
    CANCEL_REQUEST_METHOD,
    SUCCESSOR_METHOD,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    UntypedMessage,
    is_cancel_request_notification,
    method_of,
    response_type_of,
    wire_params,
    wrap_envelope,
)
from .outbox import HIGH_WATER, NOTIFICATION_FLUSH
from .pending import PendingRequests
from .requests import PreparedRequest, SentRequest

if TYPE_CHECKING:
    from ..schema._base import Request, RequestUnion
    from .roles import Role

__all__ = ("HIGH_WATER", "ConnectionTo", "DynamicHandlerGuard")

log = logging.getLogger("acp_fast")

# Module-level aliases for the per-message paths: on Python 3.11 reading an
# enum member off its class costs ~170 ns, a module global ~45 ns.
_COUNTERPART = PeerStyle.COUNTERPART
_SUCCESSOR = PeerStyle.SUCCESSOR

# The line of a typed notification up to its params, by class (a typed
# message is its own params, and its method is the class's): filled by
# send_notification_to, read by send_notification. Bounded, as a program may
# make classes of its own.
_notification_heads: dict[type, bytes] = {}
_MAX_NOTIFICATION_HEADS = 1024
# _wire.encode_request's pieces, for send_request's inlined copy.
_REQUEST_LINE = b'{"jsonrpc":"2.0","id":%d,"method":%s,"params":%s}\n'
_method_json_cache = _wire._method_cache
_method_json = _wire._method_json
_encode_payload = _wire._encode

R = TypeVar("R")
T = TypeVar("T")


class ConnectionTo(Inbound, Generic[R]):
    """A connection to a peer, as handlers and ``main`` functions see it.

    All send methods are synchronous: they append to the outgoing FIFO and
    return. ``send_request`` returns a ``SentRequest`` that is already on its
    way; await it for the answer.
    """

    def __init__(
        self,
        *,
        role: Role,
        channel: Channel,
        backend: Backend,
        handlers: list[HandlerEntry],
        close_callbacks: list[Callable[[], Awaitable[object]]],
        name: str | None,
        max_message_size: int,
        reactive: bool,
    ) -> None:
        # Ids start at a random point so that ids of the hops of a proxy chain
        # differ (each hop issues its own, docs/semantics.md §5.1) and logs do
        # not mislead.
        table = RequestTable(first_id=random.randrange(1, 1 << 30))
        super().__init__(channel, backend, role, handlers, table, max_message_size)
        self.name = name
        self._close_callbacks = close_callbacks
        self._reactive = reactive
        self._task_group: anyio.abc.TaskGroup | None = None
        self._body_scope: anyio.CancelScope | None = None  # the user's block
        self._running = False
        self._error: BaseException | None = None
        self._in_close_callbacks = False
        self._deferred_errors: list[BaseException] = []
        # The cancel scope of the drain on leaving connect_with (see _final_drain).
        self._drain_scope: anyio.CancelScope | None = None
        self._closed = anyio.Event()
        self._finished = anyio.Event()

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<ConnectionTo{label} {type(self.role).__name__} counterpart>"

    @property
    def pending_requests(self) -> PendingRequests:
        """The requests in flight now: ``outgoing`` (ours, unanswered) and
        ``incoming`` (the peer's, unanswered). Read-only; for tests and
        health checks."""
        return PendingRequests(self._table.outgoing_count, self._table.incoming_count)

    # == public API =========================================================

    @overload
    def send_request(self, request: Request[T] | RequestUnion[T]) -> SentRequest[T]: ...
    @overload
    def send_request(self, request: UntypedMessage) -> SentRequest[Any]: ...
    def send_request(self, request: Any) -> SentRequest[Any]:
        """Send ``request`` to the counterpart; returns the published handle.

        The handle is typed by the request class's result type
        (``SentRequest[v1.InitializeResponse]`` for a ``v1.InitializeRequest``);
        an ``acp.UntypedMessage`` gives ``SentRequest[Any]``.
        """
        # send_request_to(None, request) with _prepare, _encode_call,
        # _wire.encode_request and _publish's common case inlined for the
        # default peer: this runs per request.
        if not self.role.has_default_peer:
            return self.send_request_to(None, request)
        if type(request) is UntypedMessage:
            raw = request._raw  # request._wire_params(), inlined
            method, params = request.method, request._params if raw is MISSING else raw
        else:
            method, params = method_of(request), wire_params(request)
        table = self._table
        outgoing = table.new_request(method)
        outgoing.route = _COUNTERPART
        payload: bytes | Error
        try:
            if type(params) is dict:  # dicts always pass the params check
                payload = _REQUEST_LINE % (
                    outgoing.id,
                    _method_json_cache.get(method) or _method_json(method),
                    _encode_payload(params),
                )
            else:
                _check_params(method, params)
                payload = _wire.encode_request(outgoing.id, method, params)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            payload = Error.internal_error(
                f"failed to create untyped request for `{method}`: {exc}"
            )
        if (
            type(payload) is bytes
            and self._observer is None
            and not table.closing
            and not self._output_closed
        ):
            # _publish (docs/semantics.md §3.7): register, enqueue, arm.
            table.register(outgoing)
            self._enqueue(payload, True)
            outgoing.arm()
        else:
            self._publish(outgoing, payload)
        if type(request) is UntypedMessage:
            return SentRequest(self, outgoing, None)
        return SentRequest(self, outgoing, response_type_of(request))

    @overload
    def send_request_to(
        self, peer: Any, request: Request[T] | RequestUnion[T]
    ) -> SentRequest[T]: ...
    @overload
    def send_request_to(self, peer: Any, request: UntypedMessage) -> SentRequest[Any]: ...
    def send_request_to(self, peer: Any, request: Any) -> SentRequest[Any]:
        """Send ``request`` to ``peer`` (proxies: ``acp.Client`` or ``acp.Agent``)."""
        outgoing, payload = self._prepare(peer, request)
        self._publish(outgoing, payload)
        if type(request) is UntypedMessage:  # response_type_of, inlined (per request)
            return SentRequest(self, outgoing, None)
        return SentRequest(self, outgoing, response_type_of(request))

    @overload
    def prepare_request(self, request: Request[T] | RequestUnion[T]) -> PreparedRequest[T]: ...
    @overload
    def prepare_request(self, request: UntypedMessage) -> PreparedRequest[Any]: ...
    def prepare_request(self, request: Any) -> PreparedRequest[Any]:
        """An id and the encoded request, published only when consumed."""
        return self.prepare_request_to(None, request)

    @overload
    def prepare_request_to(
        self, peer: Any, request: Request[T] | RequestUnion[T]
    ) -> PreparedRequest[T]: ...
    @overload
    def prepare_request_to(self, peer: Any, request: UntypedMessage) -> PreparedRequest[Any]: ...
    def prepare_request_to(self, peer: Any, request: Any) -> PreparedRequest[Any]:
        outgoing, payload = self._prepare(peer, request)
        return PreparedRequest(self, outgoing, response_type_of(request), payload)

    def _prepare(self, peer: Any, request: Any) -> tuple[OutgoingRequest, bytes | Error]:
        # Reserve an id and encode (§3.7): nothing is registered or sent yet.
        # method_of, wire_params and the default route are inlined for the
        # common cases: this runs per request.
        if type(request) is UntypedMessage:
            method, params = request.method, request._wire_params()
        else:
            method, params = method_of(request), wire_params(request)
        outgoing = self._table.new_request(method)
        if peer is None and self.role.has_default_peer:
            route = _COUNTERPART
        else:
            route = self._route_to(peer)
        outgoing.route = route
        return outgoing, self._encode_call(outgoing.id, method, params, route)

    def send_notification(self, notification: Any) -> None:
        """Send a notification to the counterpart."""
        # send_notification_to(None, ...) for a typed message whose line
        # head is known: this runs per notification (an agent's stream).
        head = _notification_heads.get(type(notification))
        if head is not None and self.role.has_default_peer:
            self._enqueue(head + _encode_payload(notification) + b"}\n", False, NOTIFICATION_FLUSH)
            return
        self.send_notification_to(None, notification)

    def send_notification_to(self, peer: Any, notification: Any) -> None:
        method = method_of(notification)
        params = wire_params(notification)
        if not isinstance(params, msgspec.Struct):  # typed messages always pass
            _check_params(method, params)
        elif (
            params is notification
            and type(notification) not in _notification_heads
            and len(_notification_heads) < _MAX_NOTIFICATION_HEADS
        ):
            _notification_heads[type(notification)] = _wire.notification_head(method)
        if peer is None and self.role.has_default_peer:  # _route_to, inlined
            self._enqueue(_wire.encode_notification(method, params), False, NOTIFICATION_FLUSH)
        elif self._route_to(peer) is _SUCCESSOR:
            self._enqueue(
                _wire.encode_notification(SUCCESSOR_METHOD, wrap_envelope(method, params)),
                False,
                NOTIFICATION_FLUSH,
            )
        else:
            self._enqueue(_wire.encode_notification(method, params), False, NOTIFICATION_FLUSH)

    def send_cancel_request(self, request_id: Any) -> None:
        """Send a raw ``$/cancel_request`` for ``request_id``.

        For custom routing only: it does not touch any SentRequest state, so
        combined with a live handle it can produce a second cancel.
        """
        self.send_cancel_request_to(None, request_id)

    def send_cancel_request_to(self, peer: Any, request_id: Any) -> None:
        if not is_valid_id(request_id):
            raise ValueError(f"not a JSON-RPC request id: {request_id!r}")
        self.send_notification_to(
            peer, UntypedMessage(CANCEL_REQUEST_METHOD, {"requestId": request_id})
        )

    def send_proxied_message_to(self, peer: Any, dispatch: Any) -> None:
        """Forward an incoming dispatch to ``peer``, one hop (§5.3).

        A request is sent on with ``forward_response_to`` (so its cancellation
        travels with the new id); a notification is sent on, except
        ``$/cancel_request`` (plain or wrapped), which is dropped because a
        raw id means nothing on another connection; a response is routed to
        its awaiter.
        """
        if isinstance(dispatch, RequestDispatch):
            self.send_request_to(peer, dispatch.message).forward_response_to(dispatch.responder)
        elif isinstance(dispatch, NotificationDispatch):
            if not is_cancel_request_notification(dispatch.message):
                self.send_notification_to(peer, dispatch.message)
        elif isinstance(dispatch, ResponseDispatch):
            dispatch.router.route_with_result(dispatch.result)
        else:
            raise TypeError(f"not a dispatch: {dispatch!r}")

    def spawn(self, function: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Run ``function(*args)`` concurrently while the connection runs.

        If it raises, the whole connection fails with that error.
        """
        self._check_running()
        assert self._task_group is not None
        self._task_group.start_soon(self._run_spawned, function, args)

    async def incoming_closed(self) -> None:
        """Return once the peer's output ended and the EOF sequence ran."""
        await self._closed.wait()

    def is_incoming_closed(self) -> bool:
        return self._closed.is_set()

    def _must_drain(self) -> bool:
        """Whether ``drain()`` would wait: more than about 1 MiB is held.
        (The typed helpers ask before they await, per notification.)"""
        return self._out_size + self._channel.pending > HIGH_WATER

    async def drain(self) -> None:
        """Wait until the outgoing data is (mostly) handed to the transport.

        Returns at once unless more than about 1 MiB is held; use it to pace
        a sender against a peer that reads slowly.
        """
        if self._out_size + self._channel.pending <= HIGH_WATER:
            # Nothing to wait for; what is queued goes out with the iteration's
            # one write. Flushing here wrote once per message to a sender that
            # drains after each send (3x slower notification streams).
            return
        self._flush()
        if self._channel.pending > HIGH_WATER:
            try:
                await self._channel.drain()
            except ChannelError as exc:
                raise Error.internal_error(f"transport write failed: {exc}") from None

    def add_dynamic_handler(self, handler: HandlerEntry) -> DynamicHandlerGuard:
        """Add a handler at run time, after the builder's handlers.

        It takes effect before the next incoming entry, and is first offered
        every entry a handler parked with ``NotHandled(retry=True)``.
        """
        self._new_dynamic.append(handler)
        return DynamicHandlerGuard(handler)

    def _route_to(self, peer: Any) -> PeerStyle:
        if peer is None:
            if not self.role.has_default_peer:
                raise ValueError(
                    f"a {type(self.role).__name__} connection has no default peer: use the "
                    "*_to methods, e.g. send_request_to(acp.Agent, request)"
                )
            return _COUNTERPART
        return peer_style_for(self.role, peer)

    def _encode_call(
        self, request_id: int, method: str, params: Any, route: PeerStyle
    ) -> bytes | Error:
        try:
            if type(params) is not dict:  # dicts always pass (a call saved per request)
                _check_params(method, params)
            if route is _SUCCESSOR:
                return _wire.encode_request(
                    request_id, SUCCESSOR_METHOD, wrap_envelope(method, params)
                )
            return _wire.encode_request(request_id, method, params)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            return Error.internal_error(f"failed to create untyped request for `{method}`: {exc}")

    # == lifecycle ==========================================================

    # The builder's terminals (builder.py) run a connection through these:
    # _start, _until_finished (connect_to), _leave_block, _shutdown, _take_error.

    def _start(
        self,
        group: anyio.abc.TaskGroup,
        runners: list[Callable[..., Awaitable[object]]],
        body_scope: anyio.CancelScope,
    ) -> None:
        """Start the background tasks in ``group``; ``body_scope`` is the
        user's block, cancelled alone when the connection fails."""
        self._body_scope = body_scope
        self._task_group = group
        self._running = True
        group.start_soon(self._backend.run)
        group.start_soon(self._run_channel)
        group.start_soon(self._serve)
        for runner in runners:
            group.start_soon(self._run_spawned, runner, (self,))

    async def _serve(self) -> None:
        await self._reader()

    async def _read_to_end(self, rest: Iterator[bytes | OversizedLine] | None) -> bool:
        outcome = await self._read(rest)
        if outcome is None:
            return True  # a request detached from this reader and has finished
        if outcome:
            await self._eof_sequence()
        return False

    async def _run_channel(self) -> None:
        await self._channel.run()
        failure = self._channel._failure
        if failure is not None:
            self._output_failed(failure)

    async def _run_spawned(
        self, function: Callable[..., Awaitable[object]], args: tuple[Any, ...]
    ) -> None:
        try:
            await function(*args)
        except Exception as exc:
            self._fail(exc)
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit, ...: as from a handler, connect*
            # raises it as it is, not inside an exception group.
            if not is_abort(exc):
                raise
            self._fail(exc)

    def _fail(self, error: BaseException) -> None:
        """The connection fails with ``error`` (the first one wins)."""
        if self._in_close_callbacks:
            # A failure caused by EOF itself must not cut the on_close
            # callbacks short, and a close error beats it (§2.6).
            self._deferred_errors.append(error)
            return
        if self._error is None:
            self._error = error
        if self._drain_scope is not None:
            # A failure ends the exit drain at once: the drain is shielded
            # from the connection's cancellation, so it would otherwise wait
            # for its timeout before the error is reported (docs/semantics.md §6.D #43).
            self._drain_scope.cancel()
        self._stop()

    async def _end_details(self) -> dict[str, Any] | None:
        """How the peer ended, for the requests its EOF fails
        (docs/semantics.md §1.3): a process's exit status, signal and last
        stderr lines, and the last lines it wrote that were not JSON."""
        details: dict[str, Any] = {}
        describe = self._channel.describe_end
        if describe is not None:
            try:
                details.update(await describe())
            except Exception as exc:  # a diagnosis must not fail the EOF
                log.debug("could not tell how the peer ended: %r", exc)
        if self._non_json:
            details["stdout"] = list(self._non_json)
        return details or None

    def _stop(self) -> None:
        self._running = False
        if self._body_scope is not None:
            # The user's block runs: cancel it alone. Its scope sits inside the
            # task group's, and a scope only swallows its own cancellation
            # when no enclosing scope is cancelled too. The block's end then
            # stops the background tasks (this runs again, scope cleared).
            self._body_scope.cancel()
        elif self._task_group is not None:
            self._task_group.cancel_scope.cancel()

    async def _eof_sequence(self) -> None:
        table = self._table
        table.closing = True
        details = await self._end_details() if table.outgoing_count else None
        for request in table.fail_all():
            try:
                self._settle(
                    request,
                    SETTLED_ERROR,
                    Error.incoming_transport_closed(request.method, details),
                )
            except Error as exc:
                # A forwarded answer (forward_response_to) could not be
                # written: the output broke before this EOF was read, so the
                # peer is gone and nobody can be told (it must not skip
                # on_close nor fail the connection).
                log.debug("answer for %r after EOF not sent: %s", request.method, exc)
        self._in_close_callbacks = True
        close_error: BaseException | None = None
        try:
            for callback in self._close_callbacks:
                try:
                    await callback()
                except Exception as exc:
                    if close_error is None:
                        close_error = exc
        finally:
            self._in_close_callbacks = False
        self._closed.set()
        if close_error is None and self._deferred_errors:
            close_error = self._deferred_errors[0]
        if close_error is not None:
            self._fail(close_error)
            return
        if self._reactive:
            # connect_to: flush what is queued (answers included), then stop.
            await self._drain()
            self._finished.set()

    async def _final_drain(self, limit: float) -> None:
        """Flush what is queued when ``connect_with``'s main ends normally.

        A deliberate difference from the Rust SDK, which drops queued output
        there (§2.6). The drain is shielded, so that what main sent last still
        goes out, and bounded by ``limit`` seconds. The dispatch loop keeps reading
        meanwhile, so a peer that writes before it reads cannot deadlock the
        drain (docs/semantics.md §6.D #42), and a read error ends it with that error (#43).
        """
        with anyio.move_on_after(limit, shield=True) as scope:
            self._drain_scope = scope
            try:
                await self._drain()
            finally:
                self._drain_scope = None

    async def _until_finished(self) -> None:
        """Return once a reactive connection served its peer to the end."""
        await self._finished.wait()

    async def _leave_block(self, clean: bool, drain_limit: float) -> None:
        """The user's block ended (``clean``: without an exception): flush
        what it queued last, then stop the background tasks."""
        self._body_scope = None
        if clean and self._error is None:
            # What the block queued last (a final notification, say) should
            # still go out: give the transport a moment to take it. A
            # connection failure meanwhile ends the drain (docs/semantics.md §6.D #43).
            await self._final_drain(drain_limit)
        self._stop()

    def _take_error(self) -> BaseException | None:
        """Why the connection failed, if it did (asked once, at the end)."""
        error, self._error = self._error, None
        if (
            error is None
            and self._output_broken is not None
            and (self._output_fatal or not self._closed.is_set())
        ):
            # Writing failed and the peer's output never ended: not a peer that
            # went away (that would have brought EOF), so the write error is
            # the connection's failure (docs/semantics.md §2.7). A write that
            # failed for another reason (a full disk) is one even then.
            error = self._output_broken
        return error

    def _shutdown(self) -> None:
        """After the task group ended: settle what is left, refuse new sends."""
        self._running = False
        self._flush()
        self._output_closed = True
        for request in self._table.fail_all():
            self._settle(request, SETTLED_LOST, None)


def _check_params(method: str, params: Any) -> None:
    """Refuse params that are not a JSON object or array (or absent).

    JSON-RPC allows only structured params, and a peer rejects a message with
    scalar params as invalid (§1.1); the Rust SDK refuses to build such a
    message at all (§6.F #77). Without this check a scalar was written as is.
    Raises TypeError: a request's creation fails through its handle, a
    notification's send raises it.
    """
    kind = type(params)
    if params is None or kind is dict or kind is list or isinstance(params, msgspec.Struct):
        return
    if kind is msgspec.Raw:
        head = bytes(memoryview(params)[:1])
    else:
        head = _wire.encode_payload(params)[:1]
    if head not in (b"{", b"[", b"n"):
        raise TypeError(
            f"params of `{method}` must be a JSON object or array (or None), not {kind.__name__}"
        )
