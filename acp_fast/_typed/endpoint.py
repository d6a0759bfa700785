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
from collections import OrderedDict
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

__all__ = ("Endpoint", "overrides")

log = logging.getLogger("acp_fast")

DEFAULT_MAX_CONCURRENT_REQUESTS = 64
# Requests beyond the running ones wait in a queue this long at most; beyond
# it a request is refused at once, so that the loop never stops reading
# (docs/semantics.md §2.4) and memory stays bounded.
MAX_WAITING_REQUESTS = 4096
# Loop iterations without a request finishing after which a congested
# endpoint lets the loop read on (see Endpoint.make_room).
_IDLE_ITERATIONS = 3


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
        self.running = 0
        self.finished = 0  # requests run to their end, ever (see make_room)
        self.max_waiting = MAX_WAITING_REQUESTS
        # Waiting requests, oldest first (a dict used as an ordered set).
        self.waiting: OrderedDict[Waiting, None] = OrderedDict()
        self.waiting_scopes: dict[anyio.CancelScope, Waiting] = {}
        self.idle_workers: list[Worker] = []  # parked workers (see _work)
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
        """Called with the connection before its first message is handled."""
        self.cx = cx
        cx._admission = self

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
            if self.idle_workers:  # a worker is parked: hand it the request
                worker = self.idle_workers.pop()
                worker.job = job
                self.running += 1
                cx._backend.wake(worker.waiter)
            elif self.running < self.max_running:
                self.running += 1
                cx.spawn(self._work, job)
            else:
                self._wait(job)

        return handle

    # -- admission (docs/semantics.md §2.4) -------------------------------------

    def _wait(self, waiting: Waiting) -> None:
        """Queue a request until a slot frees; the dispatch loop reads on."""
        if len(self.waiting) >= self.max_waiting:
            self._finish_waiting(waiting)
            waiting.responder.respond_with_error(
                Error.internal_error(
                    {"reason": "too_many_waiting_requests", "limit": self.max_waiting}
                )
            )
            return
        self.waiting[waiting] = None
        if waiting.scope is not None:
            self.waiting_scopes[waiting.scope] = waiting
        # The peer's $/cancel_request answers a waiting request at once.
        waiting.watch = lambda: self._cancel_waiting(waiting, by_peer=True)
        if waiting.responder.cancellation()._watch(waiting.watch):
            self._cancel_waiting(waiting, by_peer=True)

    def _cancel_waiting(self, waiting: Waiting, by_peer: bool) -> None:
        if waiting not in self.waiting:
            return
        del self.waiting[waiting]
        self._finish_waiting(waiting)
        if by_peer:
            self._answer_cancelled_by_peer(waiting)
            return
        responder = waiting.responder
        if responder.answered:
            return
        try:
            result = self.cancelled_result(waiting.name, waiting.request)
        except Error as error:
            responder.respond_with_error(error)
        else:
            responder.respond({} if result is None else result)

    def _finish_waiting(self, waiting: Waiting) -> None:
        if waiting.watch is not None:
            waiting.responder.cancellation()._unwatch(waiting.watch)
            waiting.watch = None
        if waiting.scope is not None:
            self.waiting_scopes.pop(waiting.scope, None)
            self.end(waiting.name, waiting.request, waiting.scope)

    def congested(self) -> bool:
        """More requests wait than run: let them run before reading more."""
        return len(self.waiting) >= self.max_running

    async def make_room(self) -> None:
        """Let waiting requests run while they make progress; return (and let
        the loop read on) once a few loop iterations pass without any request
        finishing: the running ones may be waiting for the peer's next
        message, a permission answer or a cancel (docs/semantics.md §2.4).
        (A few: a request freed in one iteration starts in the next, and
        trio runs the tasks of one iteration in any order.)"""
        while len(self.waiting) >= self.max_running:
            finished = self.finished
            for _ in range(_IDLE_ITERATIONS):
                await anyio.lowlevel.checkpoint()
                if self.finished != finished:
                    break
            else:
                return

    def cancel_scope(self, scope: anyio.CancelScope) -> None:
        """Cancel a request registered by ``begin``: a running one is stopped,
        a waiting one is answered at once with ``cancelled_result``."""
        scope.cancel()
        waiting = self.waiting_scopes.get(scope)
        if waiting is not None:
            self._cancel_waiting(waiting, by_peer=False)

    async def _work(self, job: Waiting) -> None:
        """A worker: runs requests one after the other, for the connection's
        life, parking while idle; a task per request would cost more than
        most requests do (docs/semantics.md §2.4).

        The worker's cancel scope spans many requests: the peer's
        ``$/cancel_request`` for the running one cancels it, and only then is
        a new scope entered. (One scope per request, entered and left, was
        the largest cost of an instant request.)
        """
        assert self.cx is not None
        backend = self.cx._backend
        worker = Worker()
        next_job: Waiting | None = job
        while next_job is not None:
            job = next_job
            next_job = None
            with anyio.CancelScope() as scope:
                while True:
                    state = job.responder.cancellation()._state
                    if state.fired:  # cancelled before it started
                        self._answer_cancelled_by_peer(job)
                    else:
                        state.add_callback(scope.cancel)
                        try:
                            await self._run_request(
                                job.name, job.method, job.request, job.responder, job.scope
                            )
                        finally:
                            state.remove_callback(scope.cancel)
                    self.finished += 1
                    if scope.cancel_called:
                        # The request returned a value although cancelled:
                        # it is answered; the next one needs a fresh scope.
                        next_job = await self._next_job(worker, backend)
                        break
                    job = await self._next_job(worker, backend)
            if scope.cancelled_caught:  # the peer cancelled the running request
                self._answer_cancelled_by_peer(job)
                self.finished += 1
                next_job = await self._next_job(worker, backend)

    async def _next_job(self, worker: Worker, backend: Any) -> Waiting:
        """The oldest waiting request, or (parked) the next one handed over."""
        job = self._next_waiting()
        if job is not None:
            return job
        self.running -= 1
        worker.job = None
        worker.waiter = backend.new_waiter()
        self.idle_workers.append(worker)
        try:
            await worker.waiter
        except BaseException:
            if worker in self.idle_workers:
                self.idle_workers.remove(worker)
            raise
        return worker.take()

    def _answer_cancelled_by_peer(self, job: Waiting) -> None:
        responder = job.responder
        if responder.answered:
            return
        try:
            result = self.cancelled_by_peer(job.name, job.request)
        except Error as error:
            responder.respond_with_error(error)
        else:
            responder.respond({} if result is None else result)

    def _next_waiting(self) -> Waiting | None:
        """The oldest waiting request, taken out of the queue."""
        if not self.waiting:
            return None
        waiting, _ = self.waiting.popitem(last=False)
        if waiting.watch is not None:
            waiting.responder.cancellation()._unwatch(waiting.watch)
            waiting.watch = None
        if waiting.scope is not None:
            self.waiting_scopes.pop(waiting.scope, None)
        return waiting

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
                responder.respond({} if result is None else result)

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
        await self.instance.ext_notification(message.method, message.params)
        return None


class Waiting:
    """A request admitted but not started (docs/semantics.md §2.4)."""

    __slots__ = ("method", "name", "request", "responder", "scope", "watch")

    def __init__(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
        scope: anyio.CancelScope | None,
    ) -> None:
        self.name = name
        self.method = method
        self.request = request
        self.responder = responder
        self.scope = scope
        self.watch: Callable[[], None] | None = None


class Worker:
    """A parked worker: the waiter it sleeps on and the request it is handed."""

    __slots__ = ("job", "waiter")

    def __init__(self) -> None:
        self.job: Waiting | None = None
        self.waiter: Any = None

    def take(self) -> Waiting:
        job, self.job = self.job, None
        assert job is not None
        return job
