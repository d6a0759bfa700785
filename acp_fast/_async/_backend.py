"""The few event-loop primitives the per-message path needs, per backend.

anyio gives acp_fast its structure: task groups, cancel scopes, the public
async API, both backends. But the primitives behind anyio's streams and events
cost several microseconds each (a shielded cancel scope and a checkpoint per
stream send, an extra loop iteration per event), which is most of a round trip.
So the hot path uses the backend's own cheapest equivalents, gathered here:

* a one-shot ``Waiter`` a task parks on until a response arrives
  (asyncio: a Future; trio: ``wait_task_rescheduled``);
* ``call_soon`` to run a callback after the current task step, which is what
  coalesces all writes made in one loop iteration into one system call
  (asyncio: ``loop.call_soon``; trio: a small runner task per connection);
* readiness waits on a file descriptor (asyncio: a reader callback that stays
  registered while data keeps coming, so a busy stream costs no epoll_ctl per
  message; trio: ``trio.lowlevel.wait_readable``);
* the identity of the current task, to refuse awaiting a response from inside
  the dispatch loop (which would deadlock).

Everything here runs on the event loop's thread, except ``call_soon_threadsafe``.
Cancellation is the backend's own (anyio cancel scopes deliver through it).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from types import BuiltinFunctionType
from typing import Any, Protocol

__all__ = ("Backend", "Waiter", "current_backend")


class Waiter(Protocol):
    """A one-shot slot a single task waits on."""

    def set(self) -> None: ...

    def wait(self) -> Awaitable[None]: ...


class Backend(Protocol):
    name: str

    def current_task(self) -> object: ...

    def new_waiter(self) -> Waiter: ...

    def call_soon(self, callback: Callable[[], object]) -> object: ...

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None: ...

    def in_loop_thread(self) -> bool: ...

    async def run(self) -> None:
        """Serve call_soon for as long as the connection runs (if needed)."""

    def wait_readable(self, fd: int) -> Awaitable[None]: ...

    def wait_writable(self, fd: int) -> Awaitable[None]: ...

    def forget_fd(self, fd: int) -> None:
        """Stop watching ``fd`` (before it is closed)."""


def current_backend() -> Backend:
    """The backend of the running event loop (call from inside it)."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return TrioBackend()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError("acp_fast needs a running asyncio or trio event loop") from None
    return AsyncioBackend()


# --- asyncio ---------------------------------------------------------------


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

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread

    async def run(self) -> None:
        return None

    # Plain functions returning the future to await: two coroutine objects
    # fewer per wait than ``async def`` wrappers (a wait per read).
    def wait_readable(self, fd: int) -> Awaitable[None]:
        watch = self._readers.get(fd)
        if watch is None:
            watch = self._readers[fd] = _AsyncioReadiness(self.loop, fd, reading=True)
        return watch.wait()

    def wait_writable(self, fd: int) -> Awaitable[None]:
        watch = self._writers.get(fd)
        if watch is None:
            watch = self._writers[fd] = _AsyncioReadiness(self.loop, fd, reading=False)
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


class _AsyncioReadiness:
    """Readiness of one fd in one direction, with a lazily kept registration.

    The selector callback stays registered after it fires, so a task that
    reads, handles and waits again costs no epoll_ctl. If it fires while
    nobody waits (the task is busy handling), it unregisters itself instead of
    firing on every loop iteration, and the next wait registers again. A
    waiting task is resumed from the callback itself (``_wake_now``).
    """

    __slots__ = ("_current_task", "_fd", "_loop", "_reading", "_registered", "_waiter")

    def __init__(self, loop: Any, fd: int, *, reading: bool) -> None:
        self._loop = loop
        self._current_task = _current_task_function(loop)
        self._fd = fd
        self._reading = reading
        self._registered = False
        self._waiter: Any = None

    def wait(self) -> asyncio.Future[None]:
        """The future to await: resolved when the fd is ready (or closed)."""
        waiter: asyncio.Future[None] | None = self._waiter
        if waiter is not None and not waiter.done():
            raise RuntimeError(f"another task is already waiting on fd {self._fd}")
        waiter = self._waiter = self._loop.create_future()
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
        _wake_now(waiter, self._current_task)

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


# --- trio ------------------------------------------------------------------


class TrioBackend:
    name = "trio"

    def __init__(self) -> None:
        import trio

        self._trio = trio
        self._lowlevel = trio.lowlevel
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.get_ident()
        self._soon: deque[Callable[[], object]] = deque()
        self._runner: Any = None  # the parked runner task, when idle

    def current_task(self) -> object:
        return self._lowlevel.current_task()

    def new_waiter(self) -> Waiter:
        return _TrioWaiter(self._lowlevel)

    def call_soon(self, callback: Callable[[], object]) -> None:
        self._soon.append(callback)
        runner = self._runner
        if runner is not None:
            self._runner = None
            self._lowlevel.reschedule(runner)

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None:
        self._token.run_sync_soon(self.call_soon, callback)

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread

    async def run(self) -> None:
        lowlevel = self._lowlevel
        soon = self._soon

        def abort(_: object) -> Any:
            self._runner = None
            return lowlevel.Abort.SUCCEEDED

        while True:
            while soon:
                soon.popleft()()
            self._runner = lowlevel.current_task()
            await lowlevel.wait_task_rescheduled(abort)

    def wait_readable(self, fd: int) -> Awaitable[None]:
        return self._lowlevel.wait_readable(fd)

    def wait_writable(self, fd: int) -> Awaitable[None]:
        return self._lowlevel.wait_writable(fd)

    def forget_fd(self, fd: int) -> None:
        self._lowlevel.notify_closing(fd)


class _TrioWaiter:
    __slots__ = ("_done", "_lowlevel", "_task")

    def __init__(self, lowlevel: Any) -> None:
        self._lowlevel = lowlevel
        self._task: Any = None
        self._done = False

    def set(self) -> None:
        if self._done:
            return
        self._done = True
        task, self._task = self._task, None
        if task is not None:
            self._lowlevel.reschedule(task)

    async def wait(self) -> None:
        if self._done:
            return
        lowlevel = self._lowlevel
        self._task = lowlevel.current_task()

        def abort(_: object) -> Any:
            self._task = None
            return lowlevel.Abort.SUCCEEDED

        await lowlevel.wait_task_rescheduled(abort)
