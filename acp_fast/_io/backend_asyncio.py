"""The asyncio backend (see ``backend`` for what a backend provides).

Imported by ``current_backend()`` only while an asyncio loop runs, so that
``import acp_fast`` does not import asyncio.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from types import BuiltinFunctionType
from typing import Any, cast

from .backend import Waiter

# The loop's record of its running task (asyncio.tasks; C-accelerated).
_enter_task = asyncio.tasks._enter_task
_leave_task = asyncio.tasks._leave_task

__all__ = ("AsyncioBackend",)


class AsyncioBackend:
    name = "asyncio"

    # Bound once per connection as plain callables: these run per message.
    # asyncio.current_task is Python code on 3.11 (100 ns), the dict lookup it
    # wraps 30 ns; a partial makes a waiter without a Python frame.
    current_task: Callable[[], object]
    new_waiter: Callable[[], Waiter]
    call_soon: Callable[[Callable[[], object]], object]

    def __init__(self) -> None:
        loop = self.loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._readers: dict[int, _AsyncioReadiness] = {}
        self._writers: dict[int, _AsyncioReadiness] = {}
        self.current_task = _current_task_function(loop)
        self.new_waiter = partial(_AsyncioWaiter, loop=loop)
        self.call_soon = loop.call_soon
        # While a readiness callback runs a task's step: the waiters that
        # step released, to be resumed from the callback right after it.
        self._deferred: list[Waiter] | None = None

    def wake(self, waiter: Waiter) -> None:
        deferred = self._deferred
        if deferred is None:
            waiter.set()
        else:
            deferred.append(waiter)

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread

    def cancel(self, scope: Any) -> None:
        # anyio's CancelScope.cancel() writes the current task's repr into
        # its reason; an asyncio task's repr describes its coroutine and
        # done callbacks (15 µs, most of a cancel's way to its answer). Seen
        # from outside any task (as from a loop callback) the reason names no
        # task, and the delivery is the same for the tasks of another's scope
        # (the only use: see Backend.cancel).
        task = cast("asyncio.Task[Any] | None", self.current_task())
        if task is None:
            scope.cancel()
            return
        loop = self.loop
        _leave_task(loop, task)
        try:
            scope.cancel()
        finally:
            _enter_task(loop, task)

    async def run(self) -> None:
        return None

    # Plain functions returning the future to await: two coroutine objects
    # fewer per wait than ``async def`` wrappers (a wait per read).
    def wait_readable(self, fd: int) -> Awaitable[None]:
        watch = self._readers.get(fd)
        if watch is None:
            watch = self._readers[fd] = _AsyncioReadiness(self, fd, reading=True)
        return watch.wait()

    def wait_writable(self, fd: int) -> Awaitable[None]:
        watch = self._writers.get(fd)
        if watch is None:
            watch = self._writers[fd] = _AsyncioReadiness(self, fd, reading=False)
        return watch.wait()

    def forget_fd(self, fd: int) -> None:
        for table in (self._readers, self._writers):
            watch = table.pop(fd, None)
            if watch is not None:
                watch.close()


def _current_task_function(loop: asyncio.AbstractEventLoop) -> Callable[[], object]:
    """``asyncio.current_task(loop)`` as cheap as this Python allows."""
    if isinstance(asyncio.current_task, BuiltinFunctionType):  # C since 3.12
        return partial(asyncio.current_task, loop)
    tasks = getattr(asyncio.tasks, "_current_tasks", None)
    if type(tasks) is dict:  # 3.10 and 3.11: the registry asyncio.current_task reads
        return partial(tasks.get, loop)
    return partial(asyncio.current_task, loop)  # pragma: no cover


class _AsyncioWaiter(asyncio.Future):  # type: ignore[type-arg]
    """A one-shot waiter that *is* its future.

    Against a wrapper around ``loop.create_future()`` with an ``async def
    wait``, this saves an object, a coroutine and two Python calls per
    request: 370 → 190 ns to create, and ``wait()`` returns the future itself
    for the task to park on.
    """

    __slots__ = ()

    def set(self) -> None:
        # The waiting task may have been cancelled, which cancels the future.
        if not self.done():
            self.set_result(None)

    def wait(self) -> _AsyncioWaiter:
        return self


def _wake_now(future: asyncio.Future[None], current_task: Callable[[], object]) -> None:
    """Resolve ``future`` and run the step of the task parked on it, now.

    ``set_result`` would schedule the task's wake-up for the next loop
    iteration; from a selector callback that is a whole extra iteration per
    read (an epoll_wait and the loop's own Python bookkeeping, about 2 µs
    here, twice per in-process round trip). A selector callback runs outside
    any task, so the task's step may run right here instead, exactly as the
    loop would have run it: with its context, and only when the future has
    the single done-callback of one parked task. Anything else (no callback,
    several, a task already running) takes the ordinary path.
    """
    callbacks = future._callbacks
    if callbacks and len(callbacks) == 1 and current_task() is None:
        callback, context = callbacks[0]
        if future.remove_done_callback(callback) == 1:
            future.set_result(None)
            context.run(callback, future)
            return
    future.set_result(None)


def _wake_all(waiters: list[Any], current_task: Callable[[], object]) -> None:
    """``_wake_now`` each waiter in order; if a step raises (KeyboardInterrupt
    and the like: a task's own errors stay in the task), the rest are resolved
    the ordinary way, so that no task is left parked."""
    # Outside any task (a selector callback), as after each step run here:
    # asked once, not per waiter.
    inline = current_task() is None
    for index, waiter in enumerate(waiters):
        try:
            # _wake_now, inlined (a call per released waiter). A done waiter
            # (its task was cancelled) has no callbacks left.
            callbacks = waiter._callbacks
            if inline and callbacks and len(callbacks) == 1:
                callback, context = callbacks[0]
                if waiter.remove_done_callback(callback) == 1:
                    waiter.set_result(None)
                    context.run(callback, waiter)
                    continue
            if not waiter.done():
                waiter.set_result(None)
        except BaseException:
            for rest in waiters[index + 1 :]:
                if not rest.done():
                    rest.set_result(None)
            raise


class _AsyncioReadiness:
    """Readiness of one fd in one direction, with a lazily kept registration.

    The selector callback stays registered after it fires, so a task that
    reads, handles and waits again costs no epoll_ctl. If it fires while
    nobody waits (the task is busy handling), it unregisters itself instead of
    firing on every loop iteration, and the next wait registers again.

    A waiting task is resumed from the callback itself (``_wake_now``), and so
    are the tasks whose waiters that task's step released through
    ``backend.wake`` (the callers whose responses a dispatch loop just read):
    each would otherwise cost a scheduled callback (Handle, call_soon: about
    1 µs of asyncio's Python per request) and, at C=1, a whole loop iteration.
    They run in release order, right after the step that released them.
    """

    __slots__ = (
        "_backend",
        "_current_task",
        "_fd",
        "_loop",
        "_new_future",
        "_reading",
        "_registered",
        "_waiter",
    )

    def __init__(self, backend: AsyncioBackend, fd: int, *, reading: bool) -> None:
        self._backend = backend
        loop = self._loop = backend.loop
        self._current_task = _current_task_function(loop)
        # loop.create_future() without its Python frame (a wait per read).
        self._new_future: Callable[[], asyncio.Future[None]] = partial(asyncio.Future, loop=loop)
        self._fd = fd
        self._reading = reading
        self._registered = False
        self._waiter: Any = None

    def wait(self) -> asyncio.Future[None]:
        """The future to await: resolved when the fd is ready (or closed)."""
        waiter: asyncio.Future[None] | None = self._waiter
        if waiter is not None and not waiter.done():
            raise RuntimeError(f"another task is already waiting on fd {self._fd}")
        waiter = self._waiter = self._new_future()
        if not self._registered:
            if self._reading:
                self._loop.add_reader(self._fd, self._ready)
            else:
                self._loop.add_writer(self._fd, self._ready)
            self._registered = True
        return waiter

    def _ready(self) -> None:
        waiter = self._waiter
        self._waiter = None
        if waiter is None or waiter.done():  # nobody waits (a cancelled wait is done)
            self._unregister()
            return
        backend = self._backend
        if backend._deferred is not None:  # pragma: no cover - callbacks do not nest
            _wake_now(waiter, self._current_task)
            return
        deferred: list[Any] = []
        backend._deferred = deferred
        try:
            _wake_now(waiter, self._current_task)
        finally:
            backend._deferred = None
            if deferred:
                _wake_all(deferred, self._current_task)

    def _unregister(self) -> None:
        if self._registered:
            self._registered = False
            if self._reading:
                self._loop.remove_reader(self._fd)
            else:
                self._loop.remove_writer(self._fd)

    def close(self) -> None:
        self._unregister()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(OSError(f"fd {self._fd} was closed while waited on"))
