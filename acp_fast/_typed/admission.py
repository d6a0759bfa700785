"""Admission: which of a connection's class-API requests run, and which wait.

A class-based endpoint runs at most ``max_concurrent_requests`` requests of a
connection at once. One that finds a free slot starts eagerly in the
dispatch loop (``Endpoint._request_handler``; docs/semantics.md §2.4, eager
start). A request beyond the limit waits in a queue while the dispatch loop
reads on, so responses, cancellations and EOF are always acted on, and
runs on a worker when a slot frees: tasks kept for the connection's life
that run one request after another and park while idle (a task per request
would cost more than most requests do). A waiting request cancelled before
it starts is answered without running.

Every connection has an ``Admission`` of its own (``cx._admission``), even
when one agent instance serves several: a worker runs in its connection's
task group, and only its connection's requests.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import Context
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from .._async.connection import ConnectionTo
from .._async.responder import Responder
from .._errors import Error

if TYPE_CHECKING:
    from .endpoint import Endpoint

__all__ = ("CHECKED", "Admission", "Waiting")

# Waiting.result_type when the response class is to be looked up.
CHECKED: Any = object()

# Loop iterations without a request finishing after which a congested
# connection lets the loop read on (see Admission.make_room).
_IDLE_ITERATIONS = 3


class Admission:
    """One connection's running and waiting class-API requests."""

    def __init__(self, endpoint: Endpoint, cx: ConnectionTo[Any]) -> None:
        self.endpoint = endpoint
        self.cx = cx
        self.backend = cx._backend
        self.max_running = endpoint.max_running
        self.max_waiting = endpoint.max_waiting
        self.running = 0
        self.finished = 0  # requests run to their end, ever (see make_room)
        # Waiting requests, oldest first (a dict used as an ordered set).
        self.waiting: OrderedDict[Waiting, None] = OrderedDict()
        self.waiting_scopes: dict[anyio.CancelScope, Waiting] = {}
        self.idle_workers: list[Worker] = []  # parked workers (see _work)
        # Requests handed to a worker that has not started them yet: while
        # any is, a new request may not start eagerly ahead of it (arrival
        # order, docs/semantics.md §2.4).
        self.handed = 0

    def admit(self, job: Waiting) -> None:
        """Hand ``job`` to a parked worker, a new one, or the queue."""
        if self.running >= self.max_running:
            # (Idle workers may be parked while requests started eagerly
            # hold every slot: the limit counts those too.)
            self._wait(job)
            return
        self.running += 1
        self.handed += 1
        if self.idle_workers:  # a worker is parked: hand it the request
            worker = self.idle_workers.pop()
            worker.job = job
            self.backend.wake(worker.waiter)
        else:
            self.cx.spawn(self._work, job)

    def finished_started(self) -> None:
        """A request started in the dispatch loop that detached from it (it
        took a slot then: ``Waiting.finished``) ran to its end: its slot goes
        to the oldest waiting request, if any."""
        self.running -= 1
        self.finished += 1
        if self.waiting and self.cx._running:
            waiting = self._next_waiting()
            if waiting is not None:
                self.admit(waiting)

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
        else:
            _answer(waiting, self.endpoint.cancelled_result)

    def _finish_waiting(self, waiting: Waiting) -> None:
        if waiting.watch is not None:
            waiting.responder.cancellation()._unwatch(waiting.watch)
            waiting.watch = None
        if waiting.scope is not None:
            self.waiting_scopes.pop(waiting.scope, None)
            self.endpoint.end(waiting.name, waiting.request, waiting.scope)

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
        backend = self.backend
        worker = Worker()
        self.handed -= 1  # ``admit`` handed it this first request
        while True:
            with anyio.CancelScope() as scope:
                # Fired by the dispatch loop, from its own task (Backend.cancel).
                cancel = partial(backend.cancel, scope)
                while True:
                    state = job.responder.cancellation()._state
                    if state.fired:  # cancelled before it started
                        self._answer_cancelled_by_peer(job)
                    else:
                        state.add_callback(cancel)
                        try:
                            await self.endpoint._run_request(
                                job.name,
                                job.method,
                                job.request,
                                job.responder,
                                job.scope,
                                job.result_type,
                            )
                        finally:
                            state.remove_callback(cancel)
                    self.finished += 1
                    if scope.cancel_called:
                        # The request returned a value although cancelled:
                        # it is answered; the next one needs a fresh scope,
                        # and is awaited outside this cancelled one.
                        break
                    job = await self._next_job(worker, backend)
            if scope.cancelled_caught:  # the peer cancelled the running request
                self._answer_cancelled_by_peer(job)
                self.finished += 1
            job = await self._next_job(worker, backend)

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
        self.handed -= 1
        return worker.take()

    def _answer_cancelled_by_peer(self, job: Waiting) -> None:
        _answer(job, self.endpoint.cancelled_by_peer)

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


def _answer(job: Waiting, outcome: Callable[[str, Any], Any]) -> None:
    """Answer a request that did not run with ``outcome(name, request)``:
    its value (None answers ``{}``), or the ``acp.Error`` it raises."""
    responder = job.responder
    if responder.answered:
        return
    try:
        result = outcome(job.name, job.request)
    except Error as error:
        responder.respond_with_error(error)
    else:
        responder.respond({} if result is None else result)


class Waiting:
    """A request admitted but not started (docs/semantics.md §2.4); or one
    started in the dispatch loop that may detach from it (``admission`` set)."""

    __slots__ = (
        "admission",
        "context",
        "method",
        "name",
        "request",
        "responder",
        "result_type",
        "scope",
        "watch",
    )

    def __init__(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
        scope: anyio.CancelScope | None,
        result_type: Any = CHECKED,
    ) -> None:
        self.name = name
        self.method = method
        self.request = request
        self.responder = responder
        self.scope = scope
        # The response class the result is checked against (results.py),
        # None for any JSON value, CHECKED to look it up from the request.
        self.result_type = result_type
        self.watch: Callable[[], None] | None = None
        self.admission: Admission | None = None
        self.context: Context | None = None  # set when started eagerly

    def cancelled_while_detached(self) -> None:
        """The peer's $/cancel_request stopped it after it detached."""
        assert self.admission is not None
        self.admission._answer_cancelled_by_peer(self)

    def finished(self) -> None:
        """A request started eagerly that detached ran to its end: its slot
        goes back (to the oldest waiting request, if any)."""
        assert self.admission is not None
        self.admission.finished_started()


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
