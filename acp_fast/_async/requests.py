"""Outgoing requests: SentRequest, PreparedRequest, cancellation handles.

The state behind every handle is one core ``OutgoingRequest`` (see
acp_fast/_core/_requests_py.py): the once-only cancellation flag and the
response slot. The handles here are views on it that enforce the ownership
rules of docs/semantics.md §3.2 and §3.7 in Python form:

* A ``SentRequest`` is consumed at most once: by awaiting it, by a result
  callback (``on_receiving_result``, ``on_receiving_ok_result``,
  ``forward_response_to``), by ``map`` (which hands over to a new handle) or
  by ``detach``. Consuming twice raises RuntimeError.
* ``cancel()`` does not consume: it sends the one ``$/cancel_request`` if the
  request is still armed, and the response (a value, or the peer's -32800)
  is still delivered to whoever consumes the handle.
* Python forms of "dropping" (§7): cancelling the task that awaits the
  response sends the cancel (if still armed); garbage-collecting a handle that
  was never consumed sends it too, and warns, like a coroutine never awaited.
  ``detach()`` is the way to send and forget (a cancellation handle taken
  earlier can still stop it).
* A ``PreparedRequest`` is not on the wire until a consuming method publishes
  it. Callback consumers are attached before publication, and forwarded
  cancellation sources are watched only after it, so a cancel can neither be
  lost nor overtake its request.

Result callbacks do not run in tasks of their own. When the response arrives
during its dispatch, the dispatch loop runs the callback itself and only then
takes the next message: that is the ordering barrier of §2.4/§3.5, for the
price of a function call. Failures without a response (EOF) and consumers
attached after the response arrived run the callback in a connection task.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import msgspec

from .._core import (
    ARMED,
    SETTLED_ERROR,
    SETTLED_LOST,
    SETTLED_OK,
    UNSETTLED,
    OutgoingRequest,
)
from .._errors import Error
from ._wire import loads as _loads
from .cancellation import RequestCancellation
from .messages import decode_plain, decode_value
from .port import ConnectionPort

if TYPE_CHECKING:
    from .responder import Responder

__all__ = (
    "AbandonedRequestWarning",
    "PreparedRequest",
    "RequestCancellationHandle",
    "ResponseRouter",
    "SentRequest",
)

T = TypeVar("T")
U = TypeVar("U")


class AbandonedRequestWarning(RuntimeWarning):
    """A request handle was garbage-collected without being awaited, given a
    callback, or detached. Its ``$/cancel_request`` was sent; use
    ``detach()`` to send a request without waiting for its answer."""


# --- consumers: who gets the response -------------------------------------------


class _Consumer:
    """Delivers a settled request to a result callback or a responder."""

    __slots__ = ("handle",)

    def __init__(self, handle: SentRequest[Any]) -> None:
        self.handle = handle

    async def run(self) -> None:
        raise NotImplementedError


class _CallbackConsumer(_Consumer):
    __slots__ = ("callback",)

    def __init__(self, handle: SentRequest[Any], callback: Callable[[Any], Any]) -> None:
        super().__init__(handle)
        self.callback = callback

    async def run(self) -> None:
        handle = self.handle
        request = handle._request
        if request.settlement == SETTLED_LOST:
            # The answer can never come: the callback is not called, and the
            # connection fails with the loss (§3.2), as its task would.
            handle._conn._fail(Error.never_received(request.method))
            return
        try:
            result: Any = handle._result()
        except Error as error:
            result = error
        outcome = self.callback(result)
        if inspect.isawaitable(outcome):
            await outcome


class _OkCallbackConsumer(_Consumer):
    __slots__ = ("callback", "responder")

    def __init__(
        self, handle: SentRequest[Any], responder: Responder[Any], callback: Callable[..., Any]
    ) -> None:
        super().__init__(handle)
        self.responder = responder
        self.callback = callback

    async def run(self) -> None:
        handle = self.handle
        request = handle._request
        if request.settlement == SETTLED_LOST:
            handle._conn._fail(Error.never_received(request.method))
            return
        try:
            value = handle._result()
        except Error as error:
            self.responder.respond_with_error(error)
            return
        outcome = self.callback(value, self.responder)
        if inspect.isawaitable(outcome):
            await outcome


class _ForwardConsumer(_Consumer):
    """Relays whatever comes back to an upstream responder, bytes as they are."""

    __slots__ = ("responder",)

    def __init__(self, handle: SentRequest[Any], responder: Responder[Any]) -> None:
        super().__init__(handle)
        self.responder = responder

    def relay(self) -> None:
        request = self.handle._request
        responder = self.responder
        if responder._done:
            return
        if request.settlement == SETTLED_OK:
            value = request.value
            maps = self.handle._maps
            if maps:
                try:
                    value = self.handle._result()
                except Error as error:
                    responder.respond_with_error(error)
                    return
            responder.respond(value)
        elif request.settlement == SETTLED_ERROR:
            responder.respond_with_error(request.value)  # type: ignore[arg-type]
        else:
            # Never leave the upstream request unanswered (§3.2).
            responder.respond_with_error(Error.never_received(request.method))

    async def run(self) -> None:
        self.relay()


# --- the handles -------------------------------------------------------------------


class _Handle(Generic[T]):
    """What SentRequest and PreparedRequest share."""

    __slots__ = ("_conn", "_maps", "_request", "_response_type", "_sources")

    def __init__(
        self,
        conn: ConnectionPort,
        request: OutgoingRequest,
        response_type: type | None,
        maps: tuple[Callable[[Any], Any], ...] = (),
        sources: tuple[RequestCancellation, ...] = (),
    ) -> None:
        self._conn = conn
        self._request = request
        self._response_type = response_type
        self._maps = maps
        self._sources = sources

    @property
    def id(self) -> int:
        """The JSON-RPC id of the request (on this connection)."""
        return self._request.id

    @property
    def method(self) -> str:
        """The request's method (for an envelope: the inner method)."""
        return self._request.method

    def cancellation_handle(self) -> RequestCancellationHandle:
        """A handle that cancels this request, sharing its once-only state.

        Dropping it does nothing; it never keeps the response consumer alive.
        """
        return RequestCancellationHandle(self._conn, self._request)

    def _result(self) -> Any:
        """The converted value of a settled request; raises its Error."""
        request = self._request
        settlement = request.settlement
        if settlement == SETTLED_OK:
            value = request.value
            response_type = self._response_type
            try:
                if response_type is None:
                    # decode_plain, its common case inlined (per request)
                    value = _loads(value) if type(value) is msgspec.Raw else decode_plain(value)
                else:
                    value = decode_value(response_type, value)
            except msgspec.ValidationError as exc:
                if response_type is not None:
                    # JSON we read, of the wrong shape (docs/semantics.md §1.3)
                    raise Error.invalid_result(request.method, str(exc)) from None
                raise Error.parse_error(
                    {"error": str(exc)[:500], "phase": "deserialization", "method": request.method}
                ) from None
            except msgspec.DecodeError as exc:
                raise Error.parse_error(
                    {"error": str(exc)[:500], "phase": "deserialization", "method": request.method}
                ) from None
            for function in self._maps:
                value = function(value)
            return value
        if settlement == SETTLED_ERROR:
            raise cast(Error, request.value)
        raise Error.never_received(request.method)

    def _watch_sources(self) -> None:
        # Forwarded cancellation (§3.3): a source already cancelled cancels
        # now, the others when they fire. Only called once published.
        if not self._sources:
            return
        request = self._request
        conn = self._conn

        def cancel() -> None:
            if request.take_armed():
                conn._send_cancel(request)

        for source in self._sources:
            if source._watch(cancel):
                cancel()
        request.data = (self._sources, cancel)

    # -- consuming: the same for a sent and a prepared request ----------------
    # Each subclass says how a consumer takes over (_consumer_handle) and is
    # put in place (_deliver): attached to a request already on the wire, or
    # set before a prepared request is published.

    def on_receiving_result(self, callback: Callable[[Any], Any]) -> None:
        """Call ``callback(result)`` with the value or the ``acp.Error``.

        Returns at once. When the answer arrives, the dispatch loop waits for
        the callback before it handles the next incoming message. An error
        raised by the callback fails the connection.
        """
        self._deliver(_CallbackConsumer(self._consumer_handle(), callback))

    def on_receiving_ok_result(
        self, responder: Responder[Any], callback: Callable[[Any, Responder[Any]], Any]
    ) -> None:
        """Like on_receiving_result, but an error answers ``responder`` with it
        and ``callback(value, responder)`` runs only for a successful result."""
        self._deliver(_OkCallbackConsumer(self._consumer_handle(), responder, callback))

    def forward_response_to(self, responder: Responder[Any]) -> None:
        """Answer ``responder`` with whatever this request gets, and cancel
        this request when ``responder``'s request is cancelled.

        This is how a proxy forwards a request one hop: the upstream
        cancellation becomes one ``$/cancel_request`` with this request's id.
        """
        self._add_source(responder.cancellation())
        self._deliver(_ForwardConsumer(self._consumer_handle(), responder))

    def __await__(self) -> Generator[Any, None, T]:
        return self.block_task().__await__()

    def block_task(self) -> Awaitable[T]:
        raise NotImplementedError

    def _add_source(self, marker: RequestCancellation) -> None:
        raise NotImplementedError

    def _consumer_handle(self) -> SentRequest[T]:
        """The handle a consumer reads the answer from; marks it consumed."""
        raise NotImplementedError

    def _deliver(self, consumer: _Consumer) -> None:
        raise NotImplementedError


class SentRequest(_Handle[T]):
    """A request that is on its way; await it for the answer.

    ``await sent`` returns the response (decoded into the request's response
    class for typed requests, plain JSON values otherwise) or raises
    ``acp.Error`` with the peer's error, -32800 if the peer honoured a
    cancellation, or the local failure (EOF, ...).
    """

    __slots__ = ("_consumed", "_detached", "__weakref__")

    def __init__(
        self,
        conn: ConnectionPort,
        request: OutgoingRequest,
        response_type: type | None,
        maps: tuple[Callable[[Any], Any], ...] = (),
        sources: tuple[RequestCancellation, ...] = (),
    ) -> None:
        # _Handle.__init__ inlined: one of these is made per request.
        self._conn = conn
        self._request = request
        self._response_type = response_type
        self._maps = maps
        self._sources = sources
        self._consumed = False
        self._detached = False

    def __repr__(self) -> str:
        return f"<SentRequest id={self.id!r} method={self.method!r}>"

    # -- not consuming --------------------------------------------------------

    def cancel(self) -> None:
        """Send ``$/cancel_request`` for this request, once, if still armed.

        Later calls, other handles and drops send nothing more. Cancelling
        does not discard the answer: awaiting the request still returns the
        peer's result or raises its -32800.
        """
        if self._detached:
            return
        request = self._request
        if request.take_armed():
            self._conn._send_cancel(request)

    def forward_cancellation_from(self, marker: RequestCancellation) -> SentRequest[T]:
        """Cancel this request when ``marker`` (an incoming request's) fires.

        Sources are watched while the response is awaited by a consumer; a
        source already cancelled then cancels at once. Returns ``self``.
        """
        self._check_unconsumed()
        self._sources = (*self._sources, marker)
        return self

    def __enter__(self) -> SentRequest[T]:
        """``with cx.send_request(r) as sent:`` cancels ``sent`` if the block
        is left before its answer came (an exception, a return, a timeout)."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    # -- consuming ----------------------------------------------------------------

    def map(self, function: Callable[[T], U]) -> SentRequest[U]:
        """A new handle whose successful result is ``function(result)``."""
        self._take()
        return SentRequest(
            self._conn, self._request, self._response_type, (*self._maps, function), self._sources
        )

    def detach(self) -> None:
        """Let the request run without waiting for its answer.

        The answer is discarded when it comes, and neither this handle's
        ``cancel()`` nor its garbage collection will ever send a
        ``$/cancel_request``. A cancellation handle, taken before or after
        detaching, can still cancel the request while it is pending: it is
        an explicit, separate way to stop it ("fire and forget, but
        stoppable"; docs/cancellation.md).
        """
        self._take()
        self._detached = True

    def block_task(self) -> Awaitable[T]:
        """The answer, as an awaitable (``await sent`` does the same)."""
        return self._wait()

    async def _wait(self) -> T:
        result: T = await self
        return result

    def __await__(self) -> Generator[Any, None, T]:
        # The wait itself, as a generator: ``await sent`` iterates it directly,
        # with no coroutine object and no wrapper around it (per request).
        conn = self._conn
        request = self._request
        if self._consumed:
            self._check_unconsumed()
        if conn._backend.current_task() is conn._dispatch_task and conn._detaching is None:
            raise RuntimeError(
                f"awaiting the response to {request.method!r} inside the dispatch loop "
                "would deadlock: the response is read by this same loop. Run this code "
                "with cx.spawn(...), or use on_receiving_result(...)"
            )
        self._consumed = True
        if request.settlement == UNSETTLED:
            waiter = conn._backend.new_waiter()
            request.consumer = waiter
            if self._sources:
                self._watch_sources()
            try:
                yield from waiter.__await__()
            except BaseException:
                # The awaiting task was cancelled (cancel scope, timeout):
                # abandoning the answer cancels the request, once (§7).
                if request.consumer is waiter:
                    request.consumer = None
                if request.take_armed():
                    conn._send_cancel(request)
                raise
            finally:
                if request.data is not None:  # a call saved per request (hot path)
                    _unwatch(request)
        if (
            request.settlement == SETTLED_OK
            and self._response_type is None
            and not self._maps
            and type(request.value) is msgspec.Raw
        ):
            # _result's common case inlined (per request); what fails to
            # decode takes _result's path, which says why.
            try:
                return _loads(request.value)  # type: ignore[no-any-return]
            except (msgspec.ValidationError, msgspec.DecodeError):
                pass
        result: T = self._result()
        return result

    def _add_source(self, marker: RequestCancellation) -> None:
        self.forward_cancellation_from(marker)

    def _consumer_handle(self) -> SentRequest[T]:
        self._take()
        return self

    def _deliver(self, consumer: _Consumer) -> None:
        self._conn._check_running()
        request = self._request
        if request.settlement != UNSETTLED:
            # Already answered (or failed at creation): no barrier applies.
            self._conn._run_late_consumer(consumer)
            return
        request.ordered = True
        request.consumer = consumer
        if request.flag == ARMED:
            self._watch_sources()

    def _take(self) -> None:
        self._check_unconsumed()
        self._consumed = True

    def _check_unconsumed(self) -> None:
        if self._consumed:
            raise RuntimeError(
                f"the request {self.method!r} (id {self.id!r}) was already consumed "
                "(awaited, given a callback, mapped or detached)"
            )

    def __del__(self) -> None:
        if self._consumed:
            return
        try:
            request = self._request
            if request.take_armed():
                self._conn._send_cancel_from_anywhere(request)
                warnings.warn(
                    f"request {request.method!r} (id {request.id!r}) was dropped without "
                    "being awaited or detached; $/cancel_request was sent",
                    AbandonedRequestWarning,
                    stacklevel=2,
                )
        except Exception:
            pass


class PreparedRequest(_Handle[T]):
    """A request with an id, not yet on the wire.

    Nothing is sent until a consuming method publishes it: ``block_task()``
    (or ``await``), ``detach()``, ``on_receiving_result()``,
    ``on_receiving_ok_result()``, ``forward_response_to()``. Cancelling before
    that is a no-op and is not remembered; dropping it sends nothing.
    """

    __slots__ = ("_detached", "_payload", "_published")

    def __init__(
        self,
        conn: ConnectionPort,
        request: OutgoingRequest,
        response_type: type | None,
        payload: bytes | Error,
    ) -> None:
        super().__init__(conn, request, response_type)
        self._payload = payload
        self._published = False
        self._detached = False

    def __repr__(self) -> str:
        return f"<PreparedRequest id={self.id!r} method={self.method!r}>"

    def map(self, function: Callable[[T], U]) -> PreparedRequest[U]:
        """Transform the successful result (no publication)."""
        self._check_unpublished()
        self._maps = (*self._maps, function)
        return self  # type: ignore[return-value]

    def forward_cancellation_from(self, marker: RequestCancellation) -> PreparedRequest[T]:
        """Add a cancellation source (no publication)."""
        self._check_unpublished()
        self._sources = (*self._sources, marker)
        return self

    def block_task(self) -> SentRequest[T]:
        """Publish now and return the awaitable request.

        The request is on the wire when this returns, before anything awaits
        it; dropping the returned handle unawaited cancels it.
        """
        sent = self._sent()
        self._conn._publish(self._request, self._payload)
        return sent

    def detach(self) -> None:
        """Publish and forget; raises the error if publication failed.

        As with ``SentRequest.detach``, this handle's ``cancel()`` then
        sends nothing, while a cancellation handle (taken before or after)
        can still cancel the request while it is pending.
        """
        sent = self._sent()
        sent.detach()
        self._detached = True
        self._conn._publish(self._request, self._payload)
        request = self._request
        if request.settlement == SETTLED_ERROR:
            raise cast(Error, request.value)

    def cancel(self) -> None:
        """Send ``$/cancel_request`` for this request, once, if it was
        published and is still pending; as ``RequestCancellationHandle.cancel``
        does. Before publication it does nothing and is not remembered (the
        request, published later, runs); after ``detach()`` it sends nothing.
        """
        if self._detached:
            return
        request = self._request
        if request.take_armed():
            self._conn._send_cancel(request)

    def _add_source(self, marker: RequestCancellation) -> None:
        self._sources = (*self._sources, marker)

    def _consumer_handle(self) -> SentRequest[T]:
        sent = self._sent()
        sent._take()
        return sent

    def _deliver(self, consumer: _Consumer) -> None:
        # The consumer is in place before the request can be answered, and
        # sources are watched only once the request is armed on the wire.
        # A callback needs the connection to run it: refuse before publishing.
        self._conn._check_running()
        request = self._request
        request.ordered = True
        request.consumer = consumer
        self._conn._publish(request, self._payload)
        if request.flag == ARMED:
            consumer.handle._watch_sources()

    def _sent(self) -> SentRequest[T]:
        self._check_unpublished()
        self._published = True
        return SentRequest(
            self._conn, self._request, self._response_type, self._maps, self._sources
        )

    def _check_unpublished(self) -> None:
        if self._published:
            raise RuntimeError(f"the prepared request {self.method!r} was already published")


def _unwatch(request: OutgoingRequest) -> None:
    data = request.data
    if data is not None:
        request.data = None
        sources, callback = cast("tuple[tuple[RequestCancellation, ...], Callable[[], None]]", data)
        for source in sources:
            source._unwatch(callback)


class RequestCancellationHandle:
    """Cancels one outgoing request; shares its once-only state.

    ``cancel()`` sends exactly one ``$/cancel_request`` over all handles,
    clones and the request's own ``cancel()``; it does nothing before
    publication (and is not remembered) or after the answer. Dropping a
    handle does nothing.
    """

    __slots__ = ("_conn", "_request")

    def __init__(self, conn: ConnectionPort, request: OutgoingRequest) -> None:
        self._conn = conn
        self._request = request

    @property
    def id(self) -> int:
        return self._request.id

    def cancel(self) -> None:
        request = self._request
        if request.take_armed():
            self._conn._send_cancel(request)

    def clone(self) -> RequestCancellationHandle:
        return RequestCancellationHandle(self._conn, self._request)

    __copy__ = clone

    def __enter__(self) -> RequestCancellationHandle:
        """A guard: leaving the ``with`` block cancels the request, unless it
        was answered (or was never published) by then."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    def __repr__(self) -> str:
        return f"<RequestCancellationHandle id={self.id!r}>"


class ResponseRouter:
    """Delivers a response claimed by a dispatch handler to its awaiter.

    Made when a response arrives, which disarms the request: no
    ``$/cancel_request`` is sent for it whatever the handler does. Dropping
    the router without routing gives the awaiter a "never received" error.
    """

    __slots__ = ("_conn", "_done", "_request")

    def __init__(self, conn: ConnectionPort, request: OutgoingRequest) -> None:
        self._conn = conn
        self._request = request
        self._done = False
        request.disarm()

    @property
    def id(self) -> int:
        return self._request.id

    @property
    def method(self) -> str:
        return self._request.method

    def route(self, value: Any) -> None:
        self._route(SETTLED_OK, value)

    def route_with_error(self, error: Error) -> None:
        self._route(SETTLED_ERROR, error)

    def route_with_result(self, result: Any) -> None:
        if isinstance(result, Error):
            self._route(SETTLED_ERROR, result)
        else:
            self._route(SETTLED_OK, result)

    def route_with_internal_error(self, message: str) -> None:
        self._route(SETTLED_ERROR, Error.internal_error(message))

    def _route(self, settlement: int, value: Any) -> None:
        if self._done:
            raise RuntimeError(f"the response to {self.method!r} was already routed")
        self._done = True
        self._conn._settle(self._request, settlement, value)

    def __del__(self) -> None:
        if self._done:
            return
        try:
            self._done = True
            self._conn._settle_from_anywhere(self._request, SETTLED_LOST, None)
        except Exception:
            pass
