"""Serving a class-based agent or client: its methods become handlers.

For each wire method of its side (``methods.py``) that a subclass overrides,
one handler is registered on the connection builder:

* **Requests** run concurrently, at most ``max_concurrent_requests`` at
  once (so a prompt can await the client's answers while other messages
  flow). One that finds a free slot starts eagerly, in the dispatch loop;
  if it suspends, the loop reads on in a new task and the request finishes
  in its own (docs/semantics.md §2.4, eager start). Beyond the limit a
  request waits in a queue for the endpoint's workers while the dispatch
  loop reads on, so responses, cancellations and EOF are always acted on
  (admission). A waiting request cancelled before it starts is answered
  without running. The queue holds at most ``MAX_WAITING_REQUESTS``; a
  request beyond that is refused at once. The peer's ``$/cancel_request``
  for a running request stops it at its current ``await``, and the request
  is answered -32800 (unless the method returns a value anyway). A method
  returning None answers ``{}``, never ``null``.
* **Notifications** run in the dispatch loop, in arrival order (so a
  client's ``session_update`` calls happen in the order the updates came,
  all of them before the ``prompt`` answer that followed them).
* Methods not overridden are not registered: the peer gets -32601.
* Extension methods (``_``-prefixed) go to ``ext_method`` /
  ``ext_notification`` when those are overridden.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextvars import copy_context
from types import ModuleType
from typing import Any, cast

import anyio
import anyio.lowlevel

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.dispatch import DetachToken, describe, is_spurious_cancel
from .._async.handlers import HandlerEntry
from .._async.messages import NOT_HANDLED, UntypedMessage
from .._async.responder import Responder
from .._core import NOTIFICATION, REQUEST
from .._errors import Error
from .admission import CHECKED, Admission, Waiting
from .results import checked_result

__all__ = ("Endpoint", "overrides")

log = logging.getLogger("acp_fast")

DEFAULT_MAX_CONCURRENT_REQUESTS = 64
# Requests beyond the running ones wait in a queue this long at most; beyond
# it a request is refused at once, so that the loop never stops reading
# (docs/semantics.md §2.4) and memory stays bounded.
MAX_WAITING_REQUESTS = 4096


class Ready:
    """An awaitable that is done at once with ``value``: what a handler that
    has nothing to run returns (cheaper than a coroutine)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        # Its own iterator, done at the first step (a generator's protocol
        # without a generator).
        return cast("Generator[Any, None, Any]", self)

    def __iter__(self) -> Ready:
        return self

    def __next__(self) -> Any:
        raise StopIteration(self.value)


DONE = Ready(None)
DECLINED = Ready(NOT_HANDLED)


def overrides(instance: object, base: type, name: str) -> bool:
    """True when ``type(instance)`` defines ``name`` itself (not ``base``)."""
    return getattr(type(instance), name, None) is not getattr(base, name, None)


class Endpoint:
    """The per-connection state of a class-based agent or client."""

    def __init__(
        self,
        instance: Any,
        base: type,
        table: Mapping[str, str],
        schema: ModuleType,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
    ) -> None:
        self.instance = instance
        self.base = base
        self.table = table
        self.schema = schema
        if max_concurrent_requests < 1:
            raise ValueError("at least one request must be able to run")
        self.max_running = max_concurrent_requests
        self.max_waiting = MAX_WAITING_REQUESTS
        # The connection of the message being handled: one instance may serve
        # several connections, each with an Admission of its own.
        self.cx: ConnectionTo[Any] | None = None
        # ``call`` not overridden: a request awaits its method directly.
        self._plain_call = type(self).call is Endpoint.call

    def install(self, builder: Builder[Any]) -> Builder[Any]:
        """Register a handler for every method the instance implements."""
        methods = self.schema.METHODS
        for wire, name in self.table.items():
            if not self.implements(wire, name):
                continue
            info = methods[wire]
            # The handlers return their awaitable (a coroutine only where one
            # must run): registered as they are, not wrapped (with_handler).
            if info.request is not None:
                handle = self._request_handler(name, result_type=info.response)
                builder.with_handler(HandlerEntry.create(REQUEST, handle, info.request))
            if info.notification is not None:
                builder.with_handler(
                    HandlerEntry.create(
                        NOTIFICATION, self._notification_handler(name), info.notification
                    )
                )
        if overrides(self.instance, self.base, "ext_method"):
            handle = self._request_handler(
                "ext_method", self._call_ext_method, extension=True, result_type=None
            )
            builder.with_handler(HandlerEntry.create(REQUEST, handle))
        if overrides(self.instance, self.base, "ext_notification"):
            builder.on_receive_notification(self._ext_notification)
        return builder

    def bind(self, cx: ConnectionTo[Any]) -> None:
        """Called with the connection before its messages are handled."""
        self.cx = cx
        if not isinstance(cx._admission, Admission):
            cx._admission = Admission(self, cx)

    def implements(self, wire: str, name: str) -> bool:
        return overrides(self.instance, self.base, name)

    # -- requests --------------------------------------------------------------

    def _request_handler(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]] | None = None,
        extension: bool = False,
        result_type: Any = CHECKED,
    ) -> Callable[..., Awaitable[Any]]:
        """The handler of one method's requests (``extension``: of every
        ``_``-prefixed method the schema does not name, for ``ext_method``).
        ``result_type``: the method's response class, None when any JSON
        value answers (``checked_result`` finds it when not given)."""
        bound = method if method is not None else getattr(self.instance, name)
        scoped = name in self.SCOPED

        def handle(
            request: Any, responder: Responder[Any], cx: ConnectionTo[Any]
        ) -> Awaitable[Any]:
            if extension and not request.method.startswith("_"):
                return DECLINED
            if self.cx is not cx:
                self.bind(cx)
            admission: Admission = cx._admission  # type: ignore[assignment]  # set by bind
            # A free slot, nobody waiting, nobody handed to a worker and not
            # started yet (Admission's own state, read here per request).
            if (
                cx._may_detach
                and admission.running < admission.max_running
                and not admission.waiting
                and not admission.handed
            ):
                # Eager start (docs/semantics.md §2.4): the method runs here,
                # in the dispatch loop; if it suspends, the loop reads on in
                # a new task and this one finishes the request. Only then
                # does it take a slot and a record (``_detached``). The scope
                # is registered here, in dispatch order: a cancellation that
                # arrives right behind the request finds it.
                scope = self.begin(name, request, responder) if scoped else None
                # With the loop's own context, for a reader started if it
                # detaches: what the method sets stays with the request.
                cx._detaching = (
                    _detached,
                    admission,
                    name,
                    bound,
                    request,
                    responder,
                    scope,
                    copy_context(),
                )
                return self._run_request(name, bound, request, responder, scope, result_type)
            admission.admit(
                Waiting(
                    name,
                    bound,
                    request,
                    responder,
                    self.begin(name, request, responder) if scoped else None,
                    result_type,
                )
            )
            return DONE

        return handle

    def cancel_scope(self, scope: anyio.CancelScope) -> None:
        """Cancel a request registered by ``begin`` on the current connection:
        a running one is stopped, a waiting one is answered at once with
        ``cancelled_result``."""
        admission = self.cx._admission if self.cx is not None else None
        if isinstance(admission, Admission):
            admission.cancel_scope(scope)
        else:
            scope.cancel()

    async def _run_request(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
        scope: anyio.CancelScope | None,
        result_type: Any,
    ) -> None:
        """Run one request to its answer, on a worker or started eagerly.
        ``scope``: the one ``begin`` made; ``result_type``: see ``Waiting``.
        (Arguments rather than a ``Waiting``: an eager start makes none.)"""
        try:
            if scope is None:
                if self._plain_call:  # call, inlined (per request)
                    result = await method(request)
                else:
                    result = await self.call(name, method, request, responder)
            else:
                try:
                    with scope:
                        result = await self.call(name, method, request, responder)
                finally:
                    self.end(name, request, scope)
                if scope.cancelled_caught:
                    result = self.cancelled_result(name, request)
        except Error as error:
            if not responder._done:
                responder.respond_with_error(error)
        except Exception as exc:
            log.error("%s.%s raised", type(self.instance).__name__, name, exc_info=exc)
            if not responder._done:
                responder.respond_with_error(
                    Error.internal_error({"details": f"{type(exc).__name__}: {exc}"[:1000]})
                )
        except BaseException as exc:
            if not is_spurious_cancel(exc):
                raise
            # A CancelledError nobody asked for (re-raised from an inner task):
            # the method's failure, not the end of the worker (and its slot).
            log.error("%s.%s raised CancelledError", type(self.instance).__name__, name)
            if not responder._done:
                responder.respond_with_error(Error.internal_error({"details": describe(exc)}))
        else:
            if not responder._done:
                if result_type is None:  # any JSON value (extension methods)
                    checked = {} if result is None else result
                elif type(result) is result_type:
                    checked = result
                else:
                    checked = checked_result(self.schema, self.instance, name, request, result)
                if isinstance(checked, Error):
                    responder.respond_with_error(checked)
                else:
                    responder.respond(checked)

    # The methods whose requests ``begin`` is asked about.
    SCOPED: frozenset[str] = frozenset()

    def begin(self, name: str, request: Any, responder: Responder[Any]) -> anyio.CancelScope | None:
        """A cancel scope to run this request in, registered where the
        endpoint's own cancellation (session/cancel) can find it; or None.
        Asked only for the methods in ``SCOPED``."""
        return None

    def end(self, name: str, request: Any, scope: anyio.CancelScope) -> None:
        """The request whose scope ``begin`` made has finished."""

    def cancelled_result(self, name: str, request: Any) -> Any:
        """What a request stopped through its ``begin`` scope answers."""
        raise Error.request_cancelled()

    def cancelled_by_peer(self, name: str, request: Any) -> Any:
        """What a request the peer cancelled before it started answers."""
        raise Error.request_cancelled()

    def call(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
    ) -> Awaitable[Any]:
        """Run one request method (the peer's $/cancel_request stops it with
        its task's scope: see ``Admission._work`` and ``Inbound._read``)."""
        return method(request)

    # -- notifications --------------------------------------------------------

    def _notification_handler(self, name: str) -> Callable[..., Awaitable[None]]:
        method = getattr(self.instance, name)

        def handle(notification: Any, cx: ConnectionTo[Any]) -> Awaitable[None]:
            if self.cx is not cx:
                self.bind(cx)
            return self.notify(name, method, notification)

        return handle

    def notify(
        self, name: str, method: Callable[[Any], Awaitable[Any]], notification: Any
    ) -> Awaitable[None]:
        return method(notification)

    # -- extensions --------------------------------------------------------------

    def _call_ext_method(self, message: UntypedMessage) -> Awaitable[Any]:
        return self.instance.ext_method(message.method, message.params)  # type: ignore[no-any-return]

    async def _ext_notification(self, message: UntypedMessage, cx: ConnectionTo[Any]) -> Any:
        if not message.method.startswith("_"):
            return NOT_HANDLED
        if self.cx is not cx:
            self.bind(cx)
        await self.instance.ext_notification(message.method, message.params)
        return None


def _detached(token: DetachToken) -> Waiting:
    """The record of a request started eagerly that suspended, made from the
    token its handler left (see ``Endpoint._request_handler``): only now does
    it take a slot, until it finishes (``Waiting.finished``)."""
    _, admission, name, method, request, responder, scope, context = token
    admission.running += 1
    job = Waiting(name, method, request, responder, scope)
    job.admission = admission
    job.context = context
    return job
