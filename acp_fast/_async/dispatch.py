"""Dispatch: which handler gets an incoming entry, and where a response goes.

An incoming request or notification is offered to the builder's handlers in
registration order, then to the dynamic handlers, then to the role's default
(docs/semantics.md §2.2). Handlers run *in* the dispatch loop: the next entry
waits until the handler returns (use ``cx.spawn`` for concurrent work). A
handler that declines with ``NotHandled(retry=True)`` parks the entry, and a
dynamic handler added later is offered it first (§2.5). Every handler call
goes through ``_run_chain``.

A response is routed inline: the pending request is settled and its waiter
woken, with no task per response. A result callback registered before the
response came runs in the loop itself, so the next entry waits for it (the
ordering barrier, §2.4). Dispatch handlers see a response first (§4.2).

A request handler's ``Exception`` is its request's -32603 answer (an
``acp.Error`` is the answer), and the connection goes on. A
``BaseException`` that is not a cancellation (KeyboardInterrupt,
SystemExit, ...) is answered the same way, then stops the connection.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Coroutine
from contextvars import Context
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import msgspec

from .._core import (
    NOTIFICATION,
    REQUEST,
    SETTLED_ERROR,
    OutgoingRequest,
    RequestTable,
    is_valid_id,
)
from .._errors import Error, ErrorCode
from .._io.backend import Backend
from .._io.channel import Channel
from . import _wire
from .handlers import DISPATCH, HandlerEntry, PeerStyle
from .log_limit import LimitedLog
from .messages import (
    CANCEL_REQUEST_METHOD,
    SUCCESSOR_METHOD,
    NotHandled,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    decode_plain,
    invalid_params_error,
    method_of,
    peel_envelope,
    wire_params,
    wrap_envelope,
)
from .outbox import Outbox
from .port import Consumer
from .requests import ResponseRouter, _Consumer, _ForwardConsumer, _unwatch
from .responder import Batch, Responder

if TYPE_CHECKING:
    from .roles import Role

__all__ = (
    "DetachToken",
    "Detachable",
    "Dispatcher",
    "DynamicHandlerGuard",
    "describe",
    "detached_request",
    "is_abort",
    "is_spurious_cancel",
)

log = logging.getLogger("acp_fast")

# The handler-chain cache keeps the chains of the methods handlers name, and
# of at most this many other methods, each with a name this short: the names
# come from the peer, and a cache that kept every name it was sent would grow
# without bound (docs/semantics.md §2.2).
_CHAIN_CACHE_ENTRIES = 1024
_CHAIN_CACHE_NAME_CHARS = 256

# A parked entry: (kind, method, params, responder or None).
Parked = tuple[int, str, Any, "Responder[Any] | None"]


def is_abort(exc: BaseException) -> bool:
    """True for what a handler may raise that is neither an ``Exception`` nor
    the backend's cancellation: KeyboardInterrupt, SystemExit, a GeneratorExit
    raised by code, a custom BaseException. Such an exception stops the
    connection, and ``connect*`` raises it as it is."""
    return not isinstance(exc, Exception) and not isinstance(exc, anyio.get_cancelled_exc_class())


def is_spurious_cancel(exc: BaseException) -> bool:
    """True for an asyncio CancelledError raised although the task was not
    cancelled: a handler re-raised it from an inner task it cancelled, say.

    Left alone it ended the dispatch task as if cancelled, and the connection
    stopped reading without failing: a silent hang. It is treated as the
    handler's failure instead. (Python 3.11+: earlier versions cannot tell it
    from a real cancellation.)
    """
    asyncio = sys.modules.get("asyncio")  # not imported at start-up (import time)
    if asyncio is None or type(exc) is not asyncio.CancelledError:
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    return cancelling is not None and cancelling() == 0


def describe(exc: BaseException) -> str:
    """``"Type: message"`` for an error answer's data; never raises (a
    ``__str__`` that raises used to end the connection)."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return f"{name}: <str() failed>"
    return (f"{name}: {text}" if text else name)[:1000]


class Detachable(Protocol):
    """A request that goes on without the dispatch loop.

    A class-API request runs its first step in the dispatch loop; if it
    suspends there, the loop goes on reading in a new task and the request
    finishes in the task that started it (docs/semantics.md §2.4, eager
    start). During that step its handler leaves a ``DetachToken`` in
    ``_detaching``; only if the step suspends is the token made into this.
    """

    @property
    def responder(self) -> Responder[Any]: ...

    @property
    def context(self) -> Context | None:
        """The dispatch loop's context before the request's first step (the
        next reader runs in it), or None for the current one."""

    def cancelled_while_detached(self) -> None:
        """The peer cancelled the request while it was suspended: answer it."""

    def finished(self) -> None:
        """The request ran to its end (answered, or cancelled and about to be)."""


# What a handler leaves in ``_detaching`` during its first step: a tuple whose
# first item, called with the tuple, makes the ``Detachable``. A tuple, because
# one is made for every request started in the loop, and almost all of them
# finish without suspending.
DetachToken = tuple[Any, ...]


def detached_request(token: DetachToken) -> Detachable:
    """The ``Detachable`` a ``DetachToken`` stands for."""
    make: Callable[[DetachToken], Detachable] = token[0]
    return make(token)


class DynamicHandlerGuard:
    """Keeps a dynamic handler registered; ``remove()`` (or dropping it)
    deactivates it at once, ``detach()`` keeps it for the connection's life."""

    __slots__ = ("_detached", "_entry")

    def __init__(self, entry: HandlerEntry) -> None:
        self._entry = entry
        self._detached = False

    def detach(self) -> None:
        self._detached = True

    def remove(self) -> None:
        self._entry.active = False

    def __del__(self) -> None:
        if not self._detached:
            self._entry.active = False


class Dispatcher(Outbox):
    """Handler chains, dynamic and parked handlers, response routing."""

    role: Role
    _dispatch_task: object  # set by the read loop (inbound.py)
    _detaching: DetachToken | None  # likewise
    # Set by the connection's lifecycle (connection.py).
    _task_group: anyio.abc.TaskGroup | None
    _running: bool

    def __init__(
        self,
        channel: Channel,
        backend: Backend,
        role: Role,
        handlers: list[HandlerEntry],
        table: RequestTable,
    ) -> None:
        super().__init__(channel, backend)
        self.role = role
        self._table = table
        self._handlers = handlers
        self._chains: dict[tuple[int, str, str | None], tuple[HandlerEntry, ...]] = {}
        self._named_methods = frozenset(h.method for h in handlers if h.method is not None)
        self._unnamed_chains = 0
        self._response_handlers = tuple(h for h in handlers if h.kind == DISPATCH)
        self._peels = role.has_successor or any(
            h.peer_style == PeerStyle.SUCCESSOR for h in handlers
        )
        # What no handler takes goes to the role (a proxy forwards it).
        self._default = HandlerEntry(DISPATCH, role.default_dispatch) if role.has_default else None
        self._dynamic: list[HandlerEntry] = []
        self._new_dynamic: list[HandlerEntry] = []
        self._parked: list[Parked] = []
        self._current_response: OutgoingRequest | None = None
        self._barrier: Consumer | None = None
        self._limited_log = LimitedLog(log)

    def _fail(self, error: BaseException) -> None:
        raise NotImplementedError  # the connection's lifecycle (connection.py)

    def _check_running(self) -> None:
        if self._task_group is None or not self._running:
            raise Error.internal_error("connection is no longer running")

    def _publish(self, request: OutgoingRequest, payload: bytes | Error) -> None:
        # docs/semantics.md §3.7: closing? serialized? register, enqueue, arm.
        if self._table.closing:
            self._settle(request, SETTLED_ERROR, Error.incoming_transport_closed(request.method))
            return
        if self._output_closed:
            self._settle(
                request,
                SETTLED_ERROR,
                Error.internal_error(
                    f"failed to send outgoing request `{request.method}`: "
                    "connection is no longer running"
                ),
            )
            return
        if type(payload) is not bytes:
            self._settle(request, SETTLED_ERROR, payload)
            return
        self._table.register(request)
        if self._observer is not None:
            self._observer.request_sent(request)
        self._enqueue(payload, True)
        request.arm()

    # -- requests --------------------------------------------------------------

    def _receive_request(
        self, request_id: Any, method: str, params: Any, batch: Batch | None
    ) -> Coroutine[Any, Any, object] | None:
        """Offer a request to its handlers; returns a coroutine when one must run."""
        if self._table.in_flight(request_id):
            # A reused id would make the first request uncancellable and its
            # answer ambiguous: refuse the second (docs/semantics.md §4.4).
            line = _wire.encode_error(
                request_id,
                Error.invalid_request(f"request id {request_id!r} is already in flight").to_dict(),
            )
            if batch is None:
                self._enqueue(line)
            else:
                batch.fill(batch.new_slot(), line)
            return None
        incoming = self._table.register_incoming(request_id)
        responder: Responder[Any] = Responder(
            self, incoming, method, batch, -1 if batch is None else batch.new_slot()
        )
        inner = None
        chain: tuple[HandlerEntry, ...] | None
        if self._peels and method == SUCCESSOR_METHOD:
            inner = peel_envelope(params)
            chain = self._chain(REQUEST, method, inner)
        else:  # _chain's cache lookup, inlined (per request)
            chain = self._chains.get((REQUEST, method, None))
            if chain is None:
                chain = self._chain(REQUEST, method, None)
        if not chain and not self._dynamic:
            responder.respond_with_error(Error.method_not_found(method))
            return None
        return self._run_chain(REQUEST, chain, method, params, inner, responder)

    # -- notifications ------------------------------------------------------------

    def _receive_notification(self, method: str, params: Any) -> Coroutine[Any, Any, object] | None:
        """Offer a notification to its handlers; returns a coroutine when one must run."""
        inner = None
        if method == SUCCESSOR_METHOD or method == CANCEL_REQUEST_METHOD:
            if not self._record_cancellation(method, params):
                return None
            if self._peels and method == SUCCESSOR_METHOD:
                inner = peel_envelope(params)
        # _chain's cache lookup, inlined (this runs per notification)
        chain = self._chains.get((NOTIFICATION, method, None if inner is None else inner[0]))
        if chain is None:
            chain = self._chain(NOTIFICATION, method, inner)
        if not chain and not self._dynamic:
            return None
        return self._run_chain(NOTIFICATION, chain, method, params, inner, None)

    def _record_cancellation(self, method: str, params: Any) -> bool:
        """The cancellation pre-step (docs/semantics.md §4.5): mark before any
        handler runs. Returns False when a malformed ``$/cancel_request`` must
        stop here."""
        while method == SUCCESSOR_METHOD:
            peeled = peel_envelope(params)
            if peeled is None:
                return True  # a malformed envelope is an ordinary notification
            method, params = peeled
        if method != CANCEL_REQUEST_METHOD:
            return True
        try:
            value = decode_plain(params)
        except (msgspec.DecodeError, RecursionError):
            value = None
        if (
            not isinstance(value, dict)
            or "requestId" not in value
            or not is_valid_id(value["requestId"])
        ):
            self._limited_log.warning(
                "malformed_cancel", "ignored a malformed $/cancel_request: %.200r", value
            )
            return False
        incoming = self._table.cancel_incoming(value["requestId"])
        if incoming is not None and incoming.marker is not None:
            incoming.marker.fire()  # type: ignore[attr-defined]
        return True

    # -- running handlers ------------------------------------------------------

    async def _run_chain(
        self,
        kind: int,
        chain: tuple[HandlerEntry, ...],
        method: str,
        params: Any,
        inner: tuple[str, Any] | None,
        responder: Responder[Any] | None,
        replay: bool = False,
    ) -> bool:
        """Offer one entry to ``chain`` (then to the dynamic handlers, ahead of
        the role's default) until a handler takes it. This is the one place
        that calls handlers.

        When all decline, the entry is parked if one asked to retry, and a
        request is answered -32601 otherwise. ``replay`` offers a parked
        entry to ``chain`` alone and returns True when it declined.
        """
        if self._dynamic and not replay:
            extra = self._dynamic_for(kind, method, inner)
            if self._default is not None:
                chain = (*chain[:-1], *extra, self._default)
            else:
                chain = (*chain, *extra)
        retry = False
        for handler in chain:
            try:
                message = handler.message(method, params, inner)
            except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is one
                if responder is None:
                    log.warning("notification %r has invalid params: %s", method, exc)
                elif not responder._done:
                    responder.respond_with_error(
                        invalid_params_error(exc, inner[1] if handler.unwraps and inner else params)
                    )
                return False
            try:
                if responder is None:
                    if handler.kind == DISPATCH:
                        outcome = await handler.callback(NotificationDispatch(message), self)
                    else:
                        outcome = await handler.callback(message, self)
                elif handler.kind == DISPATCH:
                    outcome = await handler.callback(RequestDispatch(message, responder), self)
                else:
                    outcome = await handler.callback(message, responder, self)
            except Exception as exc:
                if responder is not None:
                    self._answer_failure(responder, exc, handler)
                else:
                    log.error("notification handler for %r raised", method, exc_info=exc)
                return False
            except BaseException as exc:
                if responder is not None:
                    self._answer_abort(responder, exc)
                raise
            if not isinstance(outcome, NotHandled):
                return False
            retry = retry or outcome.retry
            if outcome.message is not None:
                method, params, inner = self._replace(outcome.message, handler, method, inner)
        if replay:
            return True
        if retry:
            self._parked.append((kind, method, params, responder))
        elif responder is not None and not responder._done:
            responder.respond_with_error(Error.method_not_found(method))
        return True

    def _answer_failure(
        self, responder: Responder[Any], exc: Exception, handler: HandlerEntry | None
    ) -> None:
        if isinstance(exc, Error):
            error = exc
        else:
            log.error(
                "request handler %s for %r raised",
                getattr(handler.callback if handler else None, "__qualname__", "?"),
                responder.method,
                exc_info=exc,
            )
            error = Error.internal_error({"details": describe(exc)})
        if not responder._done:
            responder.respond_with_error(error)

    def _answer_abort(self, responder: Responder[Any], exc: BaseException) -> None:
        """A handler raised KeyboardInterrupt, SystemExit or another abort:
        answer its request (-32603) before the abort stops the connection, so
        that the peer is not left waiting. A real cancellation answers nothing
        here; a spurious one (``is_spurious_cancel``) is a handler failure."""
        if not (is_abort(exc) or is_spurious_cancel(exc)) or responder._done:
            return
        try:
            responder.respond_with_error(Error.internal_error({"details": describe(exc)}))
        except Exception:  # the connection is being torn down
            log.debug("could not answer %r after %r", responder.method, exc)

    def _replace(
        self, message: Any, handler: HandlerEntry, method: str, inner: tuple[str, Any] | None
    ) -> tuple[str, Any, tuple[str, Any] | None]:
        # A declining handler passed on a modified message. A successor-style
        # handler saw the unwrapped message, so re-wrap it (docs/semantics.md §2.1).
        new_method, new_params = method_of(message), wire_params(message)
        if handler.unwraps and inner is not None:
            return method, wrap_envelope(new_method, new_params), (new_method, new_params)
        return new_method, new_params, None

    # -- handler chains --------------------------------------------------------

    def _chain(
        self, kind: int, method: str, inner: tuple[str, Any] | None
    ) -> tuple[HandlerEntry, ...]:
        inner_method = None if inner is None else inner[0]
        key = (kind, method, inner_method)
        chain = self._chains.get(key)
        if chain is None:
            chain = tuple(h for h in self._handlers if h.matches(kind, method, inner_method))
            if self._default is not None:
                chain += (self._default,)  # the role's default comes last
            if (inner_method or method) in self._named_methods:
                self._chains[key] = chain
            elif (
                self._unnamed_chains < _CHAIN_CACHE_ENTRIES
                and len(method) + len(inner_method or "") <= _CHAIN_CACHE_NAME_CHARS
            ):
                self._unnamed_chains += 1
                self._chains[key] = chain
        return chain

    def _dynamic_for(
        self, kind: int, method: str, inner: tuple[str, Any] | None
    ) -> list[HandlerEntry]:
        if not self._dynamic:
            return []
        inner_method = None if inner is None else inner[0]
        return [h for h in self._dynamic if h.active and h.matches(kind, method, inner_method)]

    async def _add_new_dynamic_handlers(self) -> None:
        new, self._new_dynamic = self._new_dynamic, []
        self._dynamic = [h for h in self._dynamic if h.active]
        for handler in new:
            self._dynamic.append(handler)
            # Replay parked entries to the new handler first (docs/semantics.md §2.5).
            parked, self._parked = self._parked, []
            for entry in parked:
                kind, method, params, responder = entry
                inner = (
                    peel_envelope(params) if self._peels and method == SUCCESSOR_METHOD else None
                )
                if not handler.active or not handler.matches(
                    kind, method, None if inner is None else inner[0]
                ):
                    self._parked.append(entry)
                    continue
                if await self._run_chain(kind, (handler,), method, params, inner, responder, True):
                    self._parked.append(entry)

    # -- responses -------------------------------------------------------------

    def _receive_response(
        self, request_id: Any, settlement: int, payload: Any
    ) -> Coroutine[Any, Any, object] | None:
        """Route a response to its request; returns a coroutine when a
        dispatch handler or a result callback must run."""
        request = self._table.take_response(request_id)
        if request is None:
            if (
                request_id is None
                and type(payload) is Error
                and payload.code == ErrorCode.PARSE_ERROR
            ):
                # The peer's parse error for a line it got from us: on stdio,
                # most often a print() that reached the protocol stream.
                line = payload.data.get("line") if type(payload.data) is dict else None
                self._limited_log.warning(
                    "peer_parse_error",
                    "the peer could not parse a line it received from us (%.200r); "
                    "is something writing to stdout? stdio(protect_stdout=True) keeps "
                    "stray output off the protocol stream",
                    line,
                )
                return None
            self._limited_log.warning(
                "unknown_response", "dropped a response with unknown id %.200r", request_id
            )
            return None
        if self._response_handlers or self._dynamic:
            return self._dispatch_response(request, settlement, payload)
        return self._route_response(request, settlement, payload)

    def _route_response(
        self, request: OutgoingRequest, settlement: int, payload: Any
    ) -> Coroutine[Any, Any, object] | None:
        """Settle a request taken from the table (no dispatch handler to ask);
        returns the result callback to run when it is a barrier (§2.4)."""
        self._current_response = request
        self._settle(request, settlement, payload)
        self._current_response = None
        barrier = self._barrier
        if barrier is not None:
            self._barrier = None
            return self._run_consumer(barrier)
        return None

    async def _dispatch_response(
        self, request: OutgoingRequest, settlement: int, payload: Any
    ) -> None:
        router = ResponseRouter(self, request)  # disarms the request (docs/semantics.md §4.2)
        if settlement == SETTLED_ERROR:
            result = payload
        else:
            try:
                result = decode_plain(payload)
            except (msgspec.DecodeError, RecursionError) as exc:
                # A result we cannot read (1e400, invalid UTF-8, too deep) is
                # the awaiter's parse error, as SentRequest reports it; it used
                # to escape and end the connection.
                settlement = SETTLED_ERROR
                payload = result = Error.parse_error(
                    {"error": str(exc)[:500], "phase": "deserialization", "method": request.method}
                )
        self._current_response = request
        try:
            handlers = [
                h
                for h in (*self._response_handlers, *self._dynamic)
                if h.active and h.kind == DISPATCH and h.method in (None, request.method)
            ]
            for handler in handlers:
                dispatch = ResponseDispatch(result, router)
                try:
                    outcome = await handler.callback(dispatch, self)
                except Exception as exc:
                    if not router._done:
                        router.route_with_error(
                            exc if isinstance(exc, Error) else Error.internal_error(str(exc))
                        )
                    break
                del dispatch
                if isinstance(outcome, NotHandled):
                    continue
                break
            else:
                router._done = True
                self._settle(request, settlement, payload)
            del router
        finally:
            self._current_response = None
        barrier = self._barrier
        if barrier is not None:
            self._barrier = None
            await self._run_consumer(barrier)

    def _settle(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        """Fill a request's response slot and hand it to its consumer."""
        if not request.settle(settlement, value):
            return
        if self._observer is not None:
            self._observer.request_settled(request, settlement, value)
        if request.data is not None:  # a call saved per response (hot path)
            _unwatch(request)
        consumer = request.consumer
        if consumer is None:
            return  # not consumed yet (or detached: the answer is discarded)
        request.consumer = None
        if isinstance(consumer, _Consumer):
            if type(consumer) is _ForwardConsumer:
                consumer.relay()
            elif request.ordered and self._current_response is request:
                self._barrier = consumer  # the dispatch loop runs it next
            else:
                self._run_late_consumer(consumer)
        else:
            # A task awaiting the request (through the backend, which may
            # resume it sooner: see acp_fast/_io/backend_asyncio.py).
            self._backend.wake(consumer)  # type: ignore[arg-type]

    def _settle_from_anywhere(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        if self._backend.in_loop_thread():
            self._settle(request, settlement, value)
        else:
            self._backend.call_soon_threadsafe(lambda: self._settle(request, settlement, value))

    def _run_late_consumer(self, consumer: Consumer) -> None:
        if type(consumer) is _ForwardConsumer:
            consumer.relay()
            return
        group = self._task_group
        if group is None or not self._running:
            return
        group.start_soon(self._run_consumer, consumer)

    async def _run_consumer(self, consumer: Consumer) -> None:
        try:
            await consumer.run()
        except Exception as exc:
            self._fail(exc)
