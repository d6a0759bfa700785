"""Serving a class-based agent or client: its methods become handlers.

For each wire method of its side (``methods.py``) that a subclass overrides,
one handler is registered on the connection builder:

* **Requests** run concurrently on workers, tasks kept for the connection's
  life (so a prompt can await the client's answers while other messages
  flow), at most ``max_concurrent_requests`` at once. Beyond that a request waits in a
  queue while the dispatch loop reads on, so responses, cancellations and
  EOF are always acted on (docs/semantics.md §2.4, admission). A waiting
  request cancelled before it starts is answered without running. The queue
  holds at most ``MAX_WAITING_REQUESTS``; a request beyond that is refused
  at once. The peer's ``$/cancel_request`` for a running request stops it at
  its current ``await``, and the request is answered -32800 (unless the method returns a
  value anyway). A method returning None answers ``{}``, never ``null``.
* **Notifications** run in the dispatch loop, in arrival order (so a
  client's ``session_update`` calls happen in the order the updates came,
  all of them before the ``prompt`` answer that followed them).
* Methods not overridden are not registered: the peer gets -32601.
* Extension methods (``_``-prefixed) go to ``ext_method`` /
  ``ext_notification`` when those are overridden.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any

import anyio
import anyio.lowlevel

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.dispatch import describe, is_spurious_cancel
from .._async.messages import NOT_HANDLED, UntypedMessage
from .._async.responder import Responder
from .._errors import Error
from .admission import Admission, Waiting
from .results import checked_result

__all__ = ("Endpoint", "overrides")

log = logging.getLogger("acp_fast")

DEFAULT_MAX_CONCURRENT_REQUESTS = 64
# Requests beyond the running ones wait in a queue this long at most; beyond
# it a request is refused at once, so that the loop never stops reading
# (docs/semantics.md §2.4) and memory stays bounded.
MAX_WAITING_REQUESTS = 4096


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

    def install(self, builder: Builder[Any]) -> Builder[Any]:
        """Register a handler for every method the instance implements."""
        methods = self.schema.METHODS
        for wire, name in self.table.items():
            if not self.implements(wire, name):
                continue
            info = methods[wire]
            if info.request is not None:
                builder.on_receive_request(self._request_handler(name), info.request)
            if info.notification is not None:
                builder.on_receive_notification(self._notification_handler(name), info.notification)
        if overrides(self.instance, self.base, "ext_method"):
            builder.on_receive_request(self._ext_request)
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
        self, name: str, method: Callable[[Any], Awaitable[Any]] | None = None
    ) -> Callable[..., Awaitable[None]]:
        bound = method if method is not None else getattr(self.instance, name)

        async def handle(request: Any, responder: Responder[Any], cx: ConnectionTo[Any]) -> None:
            if self.cx is not cx:
                self.bind(cx)
            # Registered here, in dispatch order: a cancellation that arrives
            # right behind the request finds it even before it starts.
            job = Waiting(name, bound, request, responder, self.begin(name, request))
            admission = cx._admission
            assert isinstance(admission, Admission)
            admission.admit(job)

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
    ) -> None:
        try:
            if scope is None:
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
            if not responder.answered:
                responder.respond_with_error(error)
        except Exception as exc:
            log.error("%s.%s raised", type(self.instance).__name__, name, exc_info=exc)
            if not responder.answered:
                responder.respond_with_error(
                    Error.internal_error({"details": f"{type(exc).__name__}: {exc}"[:1000]})
                )
        except BaseException as exc:
            if not is_spurious_cancel(exc):
                raise
            # A CancelledError nobody asked for (re-raised from an inner task):
            # the method's failure, not the end of the worker (and its slot).
            log.error("%s.%s raised CancelledError", type(self.instance).__name__, name)
            if not responder.answered:
                responder.respond_with_error(Error.internal_error({"details": describe(exc)}))
        else:
            if not responder.answered:
                owner = type(self.instance).__name__
                checked = checked_result(self.schema, owner, name, request, result)
                responder.respond_with_result(checked)

    def begin(self, name: str, request: Any) -> anyio.CancelScope | None:
        """A cancel scope to run this request in, registered where the
        endpoint's own cancellation (session/cancel) can find it; or None."""
        return None

    def end(self, name: str, request: Any, scope: anyio.CancelScope) -> None:
        """The request whose scope ``begin`` made has finished."""

    def cancelled_result(self, name: str, request: Any) -> Any:
        """What a request stopped through its ``begin`` scope answers."""
        raise Error.request_cancelled()

    def cancelled_by_peer(self, name: str, request: Any) -> Any:
        """What a request the peer cancelled before it started answers."""
        raise Error.request_cancelled()

    async def call(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
    ) -> Any:
        """Run one request method (the peer's $/cancel_request stops it with
        the worker's scope, see ``_work``)."""
        return await method(request)

    # -- notifications --------------------------------------------------------

    def _notification_handler(self, name: str) -> Callable[..., Awaitable[None]]:
        method = getattr(self.instance, name)

        async def handle(notification: Any, cx: ConnectionTo[Any]) -> None:
            if self.cx is not cx:
                self.bind(cx)
            await self.notify(name, method, notification)

        return handle

    async def notify(
        self, name: str, method: Callable[[Any], Awaitable[Any]], notification: Any
    ) -> None:
        await method(notification)

    # -- extensions --------------------------------------------------------------

    async def _ext_request(
        self, message: UntypedMessage, responder: Responder[Any], cx: ConnectionTo[Any]
    ) -> Any:
        if not message.method.startswith("_"):
            return NOT_HANDLED
        handle = self._request_handler("ext_method", self._call_ext_method)
        await handle(message, responder, cx)
        return None

    async def _call_ext_method(self, message: UntypedMessage) -> Any:
        return await self.instance.ext_method(message.method, message.params)

    async def _ext_notification(self, message: UntypedMessage, cx: ConnectionTo[Any]) -> Any:
        if not message.method.startswith("_"):
            return NOT_HANDLED
        if self.cx is not cx:
            self.bind(cx)
        await self.instance.ext_notification(message.method, message.params)
        return None
