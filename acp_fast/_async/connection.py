"""A live JSON-RPC connection: the dispatch loop and the outgoing FIFO.

Runtime model (rust-sdk-semantics §2.3–2.7, DESIGN.md §5)
----------------------------------------------------------
* One **dispatch loop** per connection reads the transport, splits lines, and
  handles entries one at a time in arrival order. Handlers run *in* the loop:
  the next entry waits until the handler returns (use ``cx.spawn`` for work
  that should run concurrently). A slow handler therefore stops reading, and
  the peer's writes block: that is the backpressure, and it bounds memory.
* Responses are routed inline: the pending request is settled and its waiter
  woken, with no task per response. A result callback registered before the
  response came runs in the loop itself, so the next entry waits for it (the
  ordering barrier, §2.4).
* Every send is a synchronous append to one outgoing FIFO, so a
  ``$/cancel_request`` can never be written before its request. The FIFO is
  flushed with one write per loop iteration (all messages produced by one
  batch of input, or by many tasks in one iteration, leave in one system
  call).
* Failures: an exception in a spawned task, a result callback, an ``on_close``
  callback or the transport fails the whole connection with that error; the
  connection's task group is cancelled and ``connect*`` raises it.
* A request handler's ``Exception`` is its request's -32603 answer (an
  ``acp.Error`` is the answer), and the connection goes on. A
  ``BaseException`` that is not a cancellation (KeyboardInterrupt,
  SystemExit, ...) from a handler or a spawned task is answered the same
  way where there is a request, then stops the connection at once, and
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
import sys
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import anyio
import msgspec

from .._core import (
    ERROR_RESPONSE,
    INVALID_CALL,
    MISSING,
    NOTIFICATION,
    PARAMS_ABSENT,
    REQUEST,
    RESULT_RESPONSE,
    SETTLED_ERROR,
    SETTLED_LOST,
    SETTLED_OK,
    SHAPE_CALL,
    SHAPE_RESPONSE,
    LineBuffer,
    OutgoingRequest,
    OversizedLine,
    RequestTable,
    classify,
    classify_envelope,
    is_valid_id,
    params_head_of,
    scan_head,
)
from .._errors import Error
from .._transports._channel import Channel, ChannelError
from . import _wire
from ._backend import Backend
from .handlers import (
    DISPATCH,
    HandlerEntry,
    PeerStyle,
    peer_style_for,
)
from .messages import (
    CANCEL_REQUEST_METHOD,
    SUCCESSOR_METHOD,
    NotHandled,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    UntypedMessage,
    decode_plain,
    invalid_params_error,
    is_cancel_request_notification,
    method_of,
    peel_envelope,
    response_type_of,
    wire_params,
)
from .requests import (
    PreparedRequest,
    ResponseRouter,
    SentRequest,
    _Consumer,
    _ForwardConsumer,
    _unwatch,
)
from .responder import Responder

if TYPE_CHECKING:
    from .roles import Role

__all__ = ("ConnectionTo", "DynamicHandlerGuard")

log = logging.getLogger("acp_fast")

# Module-level aliases for the per-message paths: on Python 3.11 reading an
# enum member off its class costs ~170 ns, a module global ~45 ns.
_COUNTERPART = PeerStyle.COUNTERPART
_SUCCESSOR = PeerStyle.SUCCESSOR

R = TypeVar("R")

# Output above this size is handed to the transport at once instead of at the
# end of the loop iteration. Small, so that a peer in another process starts on
# the first messages of a batch while this side still produces the rest: with
# 64 requests in flight over stdio that took 60k to ~120k round trips/s (the
# two processes used to take turns), for ~1% more instructions in one process
# (256 KiB before; 1 and 4 KiB measured worse than 2).
_EAGER_FLUSH = 2 * 1024
# Above this many bytes held for the transport, senders that pace themselves
# (``await cx.drain()``, the typed helpers) wait.
HIGH_WATER = 1024 * 1024
# data.line of a parse error shows at most this many characters.
_LINE_ECHO = 4096


def _is_abort(exc: BaseException) -> bool:
    """True for what a handler may raise that is neither an ``Exception`` nor
    the backend's cancellation: KeyboardInterrupt, SystemExit, a GeneratorExit
    raised by code, a custom BaseException. Such an exception stops the
    connection, and ``connect*`` raises it as it is (issue 8)."""
    return not isinstance(exc, Exception) and not isinstance(exc, anyio.get_cancelled_exc_class())


def _is_spurious_cancel(exc: BaseException) -> bool:
    """True for an asyncio CancelledError raised although the task was not
    cancelled: a handler re-raised it from an inner task it cancelled, say.

    Left alone it ended the dispatch task as if cancelled, and the connection
    stopped reading without failing: a silent hang (issue 8). It is treated
    as the handler's failure instead. (Python 3.11+: earlier versions cannot
    tell it from a real cancellation.)
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


@types.coroutine
def _resume(
    coroutine: Coroutine[Any, Any, Any], yielded: Any
) -> Generator[Any, Any, BaseException | None]:
    """Go on awaiting ``coroutine``, which already yielded ``yielded`` once.

    The dispatch loop runs each handler's first step itself, to learn whether
    it completes without suspending (then no flush needs scheduling). When it
    does suspend, this passes its wait to the task runner and drives the rest,
    exactly as ``await`` would.

    An abort (see ``_is_abort``) raised by the coroutine is returned rather
    than raised, so that the loop can tell it from the GeneratorExit of its
    own closing (re-raised here) and stop the connection with it.
    """
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            try:
                yielded = coroutine.throw(exc)
            except StopIteration:
                return None
            except BaseException as raised:
                if _is_abort(raised) or _is_spurious_cancel(raised):
                    return raised
                raise
        else:
            try:
                yielded = coroutine.send(sent)
            except StopIteration:
                return None
            except BaseException as raised:
                if _is_abort(raised) or _is_spurious_cancel(raised):
                    return raised
                raise


class _Batch:
    """One incoming JSON-RPC batch: its response slots (§1.5)."""

    __slots__ = ("conn", "dispatched", "remaining", "slots")

    def __init__(self, conn: ConnectionTo[Any]) -> None:
        self.conn = conn
        self.slots: list[bytes | None] = []
        self.remaining = 0
        self.dispatched = False

    def new_slot(self) -> int:
        self.slots.append(None)
        self.remaining += 1
        return len(self.slots) - 1

    def fill(self, slot: int, line: bytes) -> None:
        if self.slots[slot] is not None:
            return  # the first completion wins
        self.slots[slot] = line[:-1]  # without its newline
        self.remaining -= 1
        self.send_if_complete()

    def send_if_complete(self) -> None:
        if self.dispatched and self.remaining == 0 and self.slots:
            lines = self.slots
            self.slots = []
            self.conn._enqueue(b"[" + b",".join(lines) + b"]\n")  # type: ignore[arg-type]


class DynamicHandlerGuard:
    """Keeps a dynamic handler registered; ``remove()`` (or dropping it)
    deactivates it at once, ``detach()`` keeps it for the connection's life."""

    __slots__ = ("_conn", "_entry", "_detached")

    def __init__(self, conn: ConnectionTo[Any], entry: HandlerEntry) -> None:
        self._conn = conn
        self._entry = entry
        self._detached = False

    def detach(self) -> None:
        self._detached = True

    def remove(self) -> None:
        self._entry.active = False

    def __del__(self) -> None:
        if not self._detached:
            self._entry.active = False


class ConnectionTo(Generic[R]):
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
        self.name = name
        self.role = role
        self._channel = channel
        self._backend = backend
        # Ids start at a random point so that ids of the hops of a proxy chain
        # differ (each hop issues its own, §5.1) and logs do not mislead.
        self._table = RequestTable(first_id=random.randrange(1, 1 << 30))
        self._framer = LineBuffer(max_message_size)
        self._max_message_size = max_message_size
        self._handlers = handlers
        self._chains: dict[tuple[int, str, str | None], tuple[HandlerEntry, ...]] = {}
        self._response_handlers = tuple(h for h in handlers if h.kind == DISPATCH)
        self._peels = role.has_successor or any(
            h.peer_style == PeerStyle.SUCCESSOR for h in handlers
        )
        self._dynamic: list[HandlerEntry] = []
        self._new_dynamic: list[HandlerEntry] = []
        self._parked: list[tuple[int, str, Any, Responder[Any] | None]] = []
        self._close_callbacks = close_callbacks
        self._reactive = reactive
        # Outgoing FIFO.
        self._out: list[bytes] = []
        self._out_size = 0
        self._flush_scheduled = False
        self._wrote_early = False  # see _enqueue
        self._sync = False  # the dispatch loop runs synchronously and flushes itself
        self._output_closed = False
        self._output_broken: Error | None = None  # why writing stopped
        # Lifecycle.
        self._dispatch_task: object = None
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
        self._current_response: OutgoingRequest | None = None
        self._barrier: _Consumer | None = None

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<ConnectionTo{label} {type(self.role).__name__} counterpart>"

    # == public API =========================================================

    def send_request(self, request: Any) -> SentRequest[Any]:
        """Send ``request`` to the counterpart; returns the published handle."""
        return self.send_request_to(None, request)

    def send_request_to(self, peer: Any, request: Any) -> SentRequest[Any]:
        """Send ``request`` to ``peer`` (proxies: ``acp.Client`` or ``acp.Agent``)."""
        outgoing, payload = self._prepare(peer, request)
        self._publish(outgoing, payload)
        if type(request) is UntypedMessage:  # response_type_of, inlined (per request)
            return SentRequest(self, outgoing, None)
        return SentRequest(self, outgoing, response_type_of(request))

    def prepare_request(self, request: Any) -> PreparedRequest[Any]:
        """An id and the encoded request, published only when consumed."""
        return self.prepare_request_to(None, request)

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
        self.send_notification_to(None, notification)

    def send_notification_to(self, peer: Any, notification: Any) -> None:
        method = method_of(notification)
        params = wire_params(notification)
        if not isinstance(params, msgspec.Struct):  # typed messages always pass
            _check_params(method, params)
        if peer is None and self.role.has_default_peer:  # _route_to, inlined
            self._enqueue(_wire.encode_notification(method, params))
        elif self._route_to(peer) is _SUCCESSOR:
            self._enqueue(_wire.encode_notification(SUCCESSOR_METHOD, _envelope(method, params)))
        else:
            self._enqueue(_wire.encode_notification(method, params))

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

    def _check_running(self) -> None:
        if self._task_group is None or not self._running:
            raise Error.internal_error("connection is no longer running")

    async def incoming_closed(self) -> None:
        """Return once the peer's output ended and the EOF sequence ran."""
        await self._closed.wait()

    def is_incoming_closed(self) -> bool:
        return self._closed.is_set()

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
        return DynamicHandlerGuard(self, handler)

    # == outgoing ===========================================================

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
                return _wire.encode_request(request_id, SUCCESSOR_METHOD, _envelope(method, params))
            return _wire.encode_request(request_id, method, params)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            return Error.internal_error(f"failed to create untyped request for `{method}`: {exc}")

    def _publish(self, request: OutgoingRequest, payload: bytes | Error) -> None:
        # rust-sdk-semantics §3.7: closing? serialized? register, enqueue, arm.
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
        self._enqueue(payload, True)
        request.arm()

    def _send_cancel(self, request: OutgoingRequest) -> None:
        params = {"requestId": request.id}
        if request.route is _SUCCESSOR:
            data = _wire.encode_notification(
                SUCCESSOR_METHOD, {"method": CANCEL_REQUEST_METHOD, "params": params}
            )
        else:
            data = _wire.encode_notification(CANCEL_REQUEST_METHOD, params)
        try:
            self._enqueue(data)
        except Error:
            log.debug("cancel for %s not sent: connection closed", request.id)

    def _send_cancel_from_anywhere(self, request: OutgoingRequest) -> None:
        # Garbage collection may run in any thread, and after the loop ended.
        if self._output_closed:
            return
        if self._backend.in_loop_thread():
            self._send_cancel(request)
        else:
            self._backend.call_soon_threadsafe(lambda: self._send_cancel(request))

    def _enqueue(self, data: bytes, early: bool = False) -> None:
        if self._output_closed:
            raise self._output_broken or Error.internal_error("connection is no longer running")
        if early and not (self._out or self._sync or self._flush_scheduled or self._wrote_early):
            # A request that is the first output since the last flush is
            # written at once; only what follows it is coalesced into one
            # write per loop iteration. A lone request (C=1) then costs no
            # extra loop iteration for its flush (one in four per round trip),
            # and with many senders it is one more write per iteration. Order
            # holds: nothing is queued ahead of it.
            self._wrote_early = True
            try:
                self._channel.write(data)
            except ChannelError as exc:
                self._output_failed(exc)
            return
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= _EAGER_FLUSH:
            self._flush()
        elif not self._sync and not self._flush_scheduled:
            self._flush_scheduled = True
            self._backend.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._wrote_early = False
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_size = 0
        try:
            self._channel.write(data)
        except ChannelError as exc:
            self._output_failed(exc)

    # -- answers -----------------------------------------------------------------

    def _send_result(self, responder: Responder[Any], value: Any) -> None:
        try:
            line = _wire.encode_result(responder._incoming.id, value)
        except (TypeError, ValueError, msgspec.EncodeError, RecursionError) as exc:
            # RecursionError: nested too deep to encode. It used to escape
            # after the responder was marked answered: no answer at all.
            error = Error.internal_error(f"failed to encode the result of `{responder.method}`")
            self._send_answer(responder, _wire.encode_error(responder.id, error.to_dict()))
            raise TypeError(f"cannot encode the result of {responder.method!r}: {exc}") from exc
        if responder._batch is None:  # _send_answer, inlined (per request)
            self._enqueue(line)
        else:
            self._send_answer(responder, line)

    def _send_error(self, responder: Responder[Any], error: Error) -> None:
        if not -(2**31) <= error.code < 2**31:
            # Peers read codes as 32-bit integers (the Rust SDK's i32): a code
            # out of that range made the whole answer unreadable there, and
            # the request hang (issue 8). Keep what it said in data.
            kept: dict[str, Any] = {"code": str(error.code)}
            if error.data is not None:
                kept["data"] = error.data
            error = Error(-32603, error.message, kept)
        try:
            line = _wire.encode_error(responder.id, error.to_dict())
        except (TypeError, ValueError, msgspec.EncodeError, RecursionError):
            # Unencodable or too deeply nested data, or a message with a lone
            # surrogate (issue 8: those ended the connection). ascii() never
            # fails to encode; a __repr__ that raises is not ours to raise.
            data: Any = None
            if error.data is not None:
                try:
                    data = ascii(error.data)
                except Exception:
                    data = f"<unprintable {type(error.data).__name__}>"
            try:
                line = _wire.encode_error(
                    responder.id, Error(error.code, error.message, data).to_dict()
                )
            except (TypeError, ValueError, msgspec.EncodeError):
                message = str(error.message).encode("utf-8", "backslashreplace").decode()
                line = _wire.encode_error(responder.id, Error(error.code, message, data).to_dict())
        self._send_answer(responder, line)

    def _send_answer(self, responder: Responder[Any], line: bytes) -> None:
        batch = responder._batch
        if batch is not None:
            batch.fill(responder._slot, line)
        else:
            self._enqueue(line)

    def _responder_dropped(self, responder: Responder[Any]) -> None:
        def answer() -> None:
            self._table.remove_incoming(responder._incoming)
            if self._output_closed:
                return
            error = Error.internal_error(
                f"request handler dropped its responder for `{responder.method}`"
            )
            log.warning(
                "responder for %r (id %r) dropped unanswered", responder.method, responder.id
            )
            self._send_answer(responder, _wire.encode_error(responder.id, error.to_dict()))

        if self._backend.in_loop_thread():
            answer()
        elif not self._output_closed:
            self._backend.call_soon_threadsafe(answer)

    # == settlement =========================================================

    def _settle(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        """Fill a request's response slot and hand it to its consumer."""
        if not request.settle(settlement, value):
            return
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
            # resume it sooner: see _backend_asyncio._AsyncioReadiness).
            self._backend.wake(consumer)  # type: ignore[arg-type]

    def _settle_from_anywhere(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        if self._backend.in_loop_thread():
            self._settle(request, settlement, value)
        else:
            self._backend.call_soon_threadsafe(lambda: self._settle(request, settlement, value))

    def _run_late_consumer(self, consumer: _Consumer) -> None:
        if type(consumer) is _ForwardConsumer:
            consumer.relay()
            return
        group = self._task_group
        if group is None or not self._running:
            return
        group.start_soon(self._run_consumer, consumer)

    async def _run_consumer(self, consumer: _Consumer) -> None:
        try:
            await consumer.run()
        except Exception as exc:
            self._fail(exc)

    # == incoming ===========================================================

    async def _serve_incoming(self) -> None:
        self._dispatch_task = self._backend.current_task()
        channel = self._channel
        framer = self._framer
        receive = self._receive
        try:
            while True:
                self._flush()
                try:
                    data = await channel.receive()
                except ChannelError as exc:
                    during = " during outgoing drain" if self._drain_scope is not None else ""
                    self._fail(Error.internal_error(f"transport read failed{during}: {exc}"))
                    return
                if not data:
                    break
                if self._output_broken is not None and not self._closed.is_set():
                    self._fail(self._output_broken)
                    return
                lines = framer.feed(data)
                channel.read_hint = framer.buffered
                self._sync = True
                try:
                    for line in lines:
                        pending = receive(line)
                        if pending is not None:
                            # Run the entry's first step here; only if it
                            # suspends does anything need flushing first.
                            aborted: BaseException | None = None
                            try:
                                yielded = pending.send(None)
                            except StopIteration:
                                pass
                            except BaseException as exc:
                                if not (_is_abort(exc) or _is_spurious_cancel(exc)):
                                    raise
                                aborted = exc
                            else:
                                self._sync = False
                                self._flush()
                                try:
                                    aborted = await _resume(pending, yielded)
                                finally:
                                    self._sync = True
                            if aborted is not None:
                                if _is_spurious_cancel(aborted):
                                    log.error("a handler raised CancelledError", exc_info=aborted)
                                    aborted = None
                                    continue
                                # A handler raised KeyboardInterrupt, SystemExit
                                # or the like (its request was answered): stop
                                # now, and let connect* raise it unwrapped
                                # rather than as a task group's exception group.
                                self._fail(aborted)
                                return
                        if self._new_dynamic:
                            await self._add_new_dynamic_handlers()
                finally:
                    self._sync = False
            rest = framer.close()
            if rest is not None:
                pending = receive(rest)
                if pending is not None:
                    await pending
            self._flush()
        finally:
            self._dispatch_task = None
        await self._eof_sequence()

    def _receive(self, line: bytes | OversizedLine) -> Coroutine[Any, Any, None] | None:
        """Handle one line; returns a coroutine when handlers must run."""
        if type(line) is not bytes:
            self._receive_oversized(cast(OversizedLine, line))
            return None
        try:
            envelope = _wire.decode_envelope(line)
        except msgspec.ValidationError:
            return self._receive_non_object(line)
        except (msgspec.DecodeError, RecursionError):
            # RecursionError: nested too deep to decode. Like serde_json's
            # depth limit in the Rust SDK, that is a parse error (issue 8: it
            # used to escape and end the connection).
            self._receive_unparsable(line)
            return None
        kind = classify_envelope(envelope)  # one call into the core per message
        if kind == RESULT_RESPONSE:
            return self._receive_response(envelope.id, SETTLED_OK, envelope.result)
        if kind == REQUEST:
            return self._receive_request(envelope.id, envelope.method, envelope.params, None)
        if kind == NOTIFICATION:
            return self._receive_notification(envelope.method, envelope.params)
        if kind == ERROR_RESPONSE:
            return self._receive_response(
                envelope.id, SETTLED_ERROR, Error.from_dict(envelope.error)
            )
        if kind == INVALID_CALL:
            self._enqueue(_wire.encode_error(None, Error.invalid_request().to_dict()))
        else:
            log.debug("dropped an invalid response-shaped message: %.200r", line)
        return None

    def _receive_unparsable(self, line: bytes) -> None:
        if not line.strip():
            return  # whitespace between messages
        text = line.decode("utf-8", "replace")
        if len(text) > _LINE_ECHO:
            text = text[:_LINE_ECHO] + f"... ({len(line)} bytes)"
        self._enqueue(_wire.encode_error(None, Error.parse_error({"line": text}).to_dict()))

    def _receive_oversized(self, line: OversizedLine) -> None:
        # Too large to decode: answer what can be answered (§ "bad input gets
        # a clear error and loses nothing").
        request_id, shape = scan_head(line.head)
        data = {
            "reason": "message_too_large",
            "size": line.size,
            "limit": self._max_message_size,
        }
        log.warning("refused a %d-byte message (limit %d)", line.size, self._max_message_size)
        if shape == SHAPE_RESPONSE or (
            shape != SHAPE_CALL and type(request_id) is int and self._table.pending(request_id)
        ):
            request = self._table.take_response(request_id)
            if request is not None:
                self._settle(
                    request,
                    SETTLED_ERROR,
                    Error.internal_error({**data, "method": request.method}),
                )
            return
        answer_id = None if request_id is MISSING else request_id
        self._enqueue(_wire.encode_error(answer_id, Error.invalid_request(data).to_dict()))

    def _receive_non_object(self, line: bytes) -> Coroutine[Any, Any, None] | None:
        try:
            value = _wire.loads(line)
        except (msgspec.DecodeError, RecursionError):
            # The envelope decoder refused a value that is JSON but not one we
            # can read: a number out of range (1e400) or nesting too deep.
            # Before issue 8 this escaped and ended the connection.
            self._receive_unparsable(line)
            return None
        if type(value) is list and value:
            return self._receive_batch(value)
        self._enqueue(_wire.encode_error(None, Error.invalid_request().to_dict()))
        return None

    async def _receive_batch(self, entries: list[Any]) -> None:
        batch = _Batch(self)
        for entry in entries:
            if type(entry) is not dict:
                line = _wire.encode_error(None, Error.invalid_request().to_dict())
                batch.fill(batch.new_slot(), line)
                continue
            params = entry.get("params", MISSING)
            kind = classify(
                entry.get("jsonrpc", MISSING),
                entry.get("id", MISSING),
                entry.get("method", MISSING),
                PARAMS_ABSENT if params is MISSING else params_head_of(params),
                "result" in entry,
                "error" in entry,
            )
            pending: Coroutine[Any, Any, None] | None = None
            if kind == REQUEST:
                pending = self._receive_request(entry["id"], entry["method"], params, batch)
            elif kind == NOTIFICATION:
                pending = self._receive_notification(entry["method"], params)
            elif kind == RESULT_RESPONSE:
                pending = self._receive_response(entry["id"], SETTLED_OK, entry["result"])
            elif kind == ERROR_RESPONSE:
                pending = self._receive_response(
                    entry["id"], SETTLED_ERROR, Error.from_dict(entry["error"])
                )
            elif kind == INVALID_CALL:
                line = _wire.encode_error(None, Error.invalid_request().to_dict())
                batch.fill(batch.new_slot(), line)
            if pending is not None:
                await pending
            if self._new_dynamic:
                await self._add_new_dynamic_handlers()
        batch.dispatched = True
        batch.send_if_complete()

    # -- responses -------------------------------------------------------------

    def _receive_response(
        self, request_id: Any, settlement: int, payload: Any
    ) -> Coroutine[Any, Any, None] | None:
        request = self._table.take_response(request_id)
        if request is None:
            log.warning("dropped a response with unknown id %r", request_id)
            return None
        if self._response_handlers or self._dynamic:
            return self._dispatch_response(request, settlement, payload)
        self._current_response = request
        self._settle(request, settlement, payload)
        self._current_response = None
        barrier = self._barrier
        if barrier is not None:
            self._barrier = None
            return self._run_barrier(barrier)
        return None

    async def _run_barrier(self, consumer: _Consumer) -> None:
        try:
            await consumer.run()
        except Exception as exc:
            self._fail(exc)

    async def _dispatch_response(
        self, request: OutgoingRequest, settlement: int, payload: Any
    ) -> None:
        router = ResponseRouter(self, request)  # disarms the request (§4.2)
        if settlement == SETTLED_ERROR:
            result = payload
        else:
            try:
                result = decode_plain(payload)
            except (msgspec.DecodeError, RecursionError) as exc:
                # A result we cannot read (1e400, invalid UTF-8, too deep) is
                # the awaiter's parse error, as SentRequest reports it; it used
                # to escape and end the connection (issue 8).
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
            await self._run_barrier(barrier)

    # -- requests --------------------------------------------------------------

    def _receive_request(
        self, request_id: Any, method: str, params: Any, batch: _Batch | None
    ) -> Coroutine[Any, Any, None] | None:
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
        if not chain and not self._dynamic and not self.role.has_default:
            responder.respond_with_error(Error.method_not_found(method))
            return None
        return self._run_request(chain, method, params, inner, responder)

    async def _run_request(
        self,
        chain: tuple[HandlerEntry, ...],
        method: str,
        params: Any,
        inner: tuple[str, Any] | None,
        responder: Responder[Any],
    ) -> None:
        retry = False
        for handler in (
            (*chain, *self._dynamic_for(REQUEST, method, inner)) if self._dynamic else chain
        ):
            try:
                message = handler.message(method, params, inner)
            except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is one
                if not responder._done:
                    responder.respond_with_error(
                        invalid_params_error(exc, inner[1] if handler.unwraps and inner else params)
                    )
                return
            try:
                if handler.kind == DISPATCH:
                    outcome = await handler.callback(RequestDispatch(message, responder), self)
                else:
                    outcome = await handler.callback(message, responder, self)
            except Exception as exc:
                self._answer_failure(responder, exc, handler)
                return
            except BaseException as exc:
                self._answer_abort(responder, exc)
                raise
            if isinstance(outcome, NotHandled):
                retry = retry or outcome.retry
                if outcome.message is not None:
                    method, params, inner = self._replace(outcome.message, handler, method, inner)
                continue
            return
        if self.role.has_default:
            dispatch: Any = RequestDispatch(UntypedMessage._from_raw(method, params), responder)
            try:
                outcome = await self.role.default_dispatch(dispatch, self)
            except Exception as exc:
                self._answer_failure(responder, exc, None)
                return
            except BaseException as exc:
                self._answer_abort(responder, exc)
                raise
            if not isinstance(outcome, NotHandled):
                return
        if retry:
            self._parked.append((REQUEST, method, params, responder))
        elif not responder._done:
            responder.respond_with_error(Error.method_not_found(method))

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
            error = Error.internal_error({"details": _describe(exc)})
        if not responder._done:
            responder.respond_with_error(error)

    def _answer_abort(self, responder: Responder[Any], exc: BaseException) -> None:
        """A handler raised KeyboardInterrupt, SystemExit or another abort:
        answer its request (-32603) before the abort stops the connection, so
        that the peer is not left waiting. A real cancellation answers nothing
        here; a spurious one (``_is_spurious_cancel``) is a handler failure."""
        if not (_is_abort(exc) or _is_spurious_cancel(exc)) or responder._done:
            return
        try:
            responder.respond_with_error(Error.internal_error({"details": _describe(exc)}))
        except Exception:  # the connection is being torn down
            log.debug("could not answer %r after %r", responder.method, exc)

    # -- notifications ------------------------------------------------------------

    def _receive_notification(self, method: str, params: Any) -> Coroutine[Any, Any, None] | None:
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
        if not chain and not self._dynamic and not self.role.has_default:
            return None
        return self._run_notification(chain, method, params, inner)

    def _record_cancellation(self, method: str, params: Any) -> bool:
        """The cancellation pre-step (§4.5): mark before any handler runs.

        Returns False when a malformed ``$/cancel_request`` must stop here.
        """
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
            log.warning("ignored a malformed $/cancel_request: %.200r", value)
            return False
        incoming = self._table.cancel_incoming(value["requestId"])
        if incoming is not None and incoming.marker is not None:
            incoming.marker.fire()  # type: ignore[attr-defined]
        return True

    async def _run_notification(
        self,
        chain: tuple[HandlerEntry, ...],
        method: str,
        params: Any,
        inner: tuple[str, Any] | None,
    ) -> None:
        retry = False
        for handler in (
            (*chain, *self._dynamic_for(NOTIFICATION, method, inner)) if self._dynamic else chain
        ):
            try:
                message = handler.message(method, params, inner)
            except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is one
                log.warning("notification %r has invalid params: %s", method, exc)
                return
            try:
                if handler.kind == DISPATCH:
                    outcome = await handler.callback(NotificationDispatch(message), self)
                else:
                    outcome = await handler.callback(message, self)
            except Exception as exc:
                log.error("notification handler for %r raised", method, exc_info=exc)
                return
            if isinstance(outcome, NotHandled):
                retry = retry or outcome.retry
                if outcome.message is not None:
                    method, params, inner = self._replace(outcome.message, handler, method, inner)
                continue
            return
        if self.role.has_default:
            dispatch = NotificationDispatch(UntypedMessage._from_raw(method, params))
            try:
                outcome = await self.role.default_dispatch(dispatch, self)
            except Exception as exc:
                log.error("default handling of %r failed", method, exc_info=exc)
                return
            if not isinstance(outcome, NotHandled):
                return
        if retry:
            self._parked.append((NOTIFICATION, method, params, None))

    def _replace(
        self, message: Any, handler: HandlerEntry, method: str, inner: tuple[str, Any] | None
    ) -> tuple[str, Any, tuple[str, Any] | None]:
        # A declining handler passed on a modified message. A successor-style
        # handler saw the unwrapped message, so re-wrap it (§2.1).
        new_method, new_params = method_of(message), wire_params(message)
        if handler.unwraps and inner is not None:
            return method, _envelope(new_method, new_params), (new_method, new_params)
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
            if len(self._chains) < 1024:
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
            # Replay parked entries to the new handler first (§2.5).
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
                if not await self._offer(handler, kind, method, params, inner, responder):
                    self._parked.append(entry)

    async def _offer(
        self,
        handler: HandlerEntry,
        kind: int,
        method: str,
        params: Any,
        inner: tuple[str, Any] | None,
        responder: Responder[Any] | None,
    ) -> bool:
        try:
            message = handler.message(method, params, inner)
        except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is one
            if responder is not None and not responder._done:
                responder.respond_with_error(invalid_params_error(exc, params))
            return True
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
                log.error("dynamic handler for %r raised", method, exc_info=exc)
            return True
        except BaseException as exc:
            if responder is not None:
                self._answer_abort(responder, exc)
            raise
        return not isinstance(outcome, NotHandled)

    # == lifecycle ==========================================================

    def _start(
        self, group: anyio.abc.TaskGroup, runners: list[Callable[..., Awaitable[object]]]
    ) -> None:
        self._task_group = group
        self._running = True
        group.start_soon(self._backend.run)
        group.start_soon(self._run_channel)
        group.start_soon(self._serve_incoming)
        for runner in runners:
            group.start_soon(self._run_spawned, runner, (self,))

    async def _run_channel(self) -> None:
        await self._channel.run()
        failure = self._channel._failure
        if failure is not None:
            self._output_failed(failure)

    def _output_failed(self, exc: BaseException) -> None:
        """Writing to the transport failed (the peer closed its end).

        A peer that goes away closes both directions: the write fails, and
        the read side sees EOF, which ends the connection the normal way. So
        a write failure does not fail the connection by itself: output stops
        (later sends fail), and the dispatch loop decides on its next read.
        If that read brings EOF, the peer is gone and the connection ends
        cleanly; if it brings data, the peer stopped reading but talks on,
        and the connection fails with the write error (§2.7).
        """
        if self._output_broken is not None:
            return
        self._output_broken = Error.internal_error(f"transport write failed: {exc}")
        self._output_closed = True
        self._out.clear()
        self._out_size = 0
        log.debug("transport write failed: %s", exc)

    async def _run_spawned(
        self, function: Callable[..., Awaitable[object]], args: tuple[Any, ...]
    ) -> None:
        try:
            await function(*args)
        except Exception as exc:
            self._fail(exc)
        except BaseException as exc:
            # KeyboardInterrupt, SystemExit, ...: as from a handler, connect*
            # raises it as it is, not inside an exception group (issue 8).
            if not _is_abort(exc):
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
            # for its timeout before the error is reported (§6.D #43).
            self._drain_scope.cancel()
        self._stop()

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
        for request in table.fail_all():
            try:
                self._settle(
                    request, SETTLED_ERROR, Error.incoming_transport_closed(request.method)
                )
            except Error as exc:
                # A forwarded answer (forward_response_to) could not be
                # written: the output broke before this EOF was read, so the
                # peer is gone and nobody can be told. It used to escape here,
                # skip on_close and fail the connection (issue 8).
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
        drain (§6.D #42), and a read error ends it with that error (#43).
        """
        with anyio.move_on_after(limit, shield=True) as scope:
            self._drain_scope = scope
            try:
                await self._drain()
            finally:
                self._drain_scope = None

    async def _drain(self) -> None:
        self._flush()
        try:
            await self._channel.drain()
        except ChannelError:
            pass

    def _shutdown(self) -> None:
        """After the task group ended: settle what is left, refuse new sends."""
        self._running = False
        self._flush()
        self._output_closed = True
        for request in self._table.fail_all():
            self._settle(request, SETTLED_LOST, None)


def _describe(exc: BaseException) -> str:
    """``"Type: message"`` for an error answer's data; never raises (a
    ``__str__`` that raises used to end the connection, issue 8)."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        return f"{name}: <str() failed>"
    return (f"{name}: {text}" if text else name)[:1000]


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


def _envelope(method: str, params: Any) -> dict[str, Any]:
    if params is None:
        return {"method": method}
    return {"method": method, "params": params}
