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
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ("Backend", "Waiter", "current_backend")


class Waiter(Protocol):
    """A one-shot slot a single task waits on."""

    def set(self) -> None: ...

    async def wait(self) -> None: ...


class Backend(Protocol):
    name: str

    def current_task(self) -> object: ...

    def new_waiter(self) -> Waiter: ...

    def call_soon(self, callback: Callable[[], object]) -> None: ...

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None: ...

    def in_loop_thread(self) -> bool: ...

    async def run(self) -> None:
        """Serve call_soon for as long as the connection runs (if needed)."""

    async def wait_readable(self, fd: int) -> None: ...

    async def wait_writable(self, fd: int) -> None: ...

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

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._readers: dict[int, _AsyncioReadiness] = {}
        self._writers: dict[int, _AsyncioReadiness] = {}

    def current_task(self) -> object:
        return asyncio.current_task(self.loop)

    def new_waiter(self) -> Waiter:
        return _AsyncioWaiter(self.loop.create_future())

    def call_soon(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon(callback)

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread

    async def run(self) -> None:
        return None

    async def wait_readable(self, fd: int) -> None:
        watch = self._readers.get(fd)
        if watch is None:
            watch = self._readers[fd] = _AsyncioReadiness(self.loop, fd, reading=True)
        await watch.wait()

    async def wait_writable(self, fd: int) -> None:
        watch = self._writers.get(fd)
        if watch is None:
            watch = self._writers[fd] = _AsyncioReadiness(self.loop, fd, reading=False)
        await watch.wait()

    def forget_fd(self, fd: int) -> None:
        for table in (self._readers, self._writers):
            watch = table.pop(fd, None)
            if watch is not None:
                watch.close()


class _AsyncioWaiter:
    __slots__ = ("_future",)

    def __init__(self, future: Any) -> None:
        self._future = future

    def set(self) -> None:
        # The waiting task may have been cancelled, which cancels the future.
        if not self._future.done():
            self._future.set_result(None)

    async def wait(self) -> None:
        await self._future


class _AsyncioReadiness:
    """Readiness of one fd in one direction, with a lazily kept registration.

    The selector callback stays registered after it fires, so a task that
    reads, handles and waits again costs no epoll_ctl. If it fires while
    nobody waits (the task is busy handling), it unregisters itself instead of
    firing on every loop iteration, and the next wait registers again.
    """

    __slots__ = ("_fd", "_loop", "_reading", "_registered", "_waiter")

    def __init__(self, loop: Any, fd: int, *, reading: bool) -> None:
        self._loop = loop
        self._fd = fd
        self._reading = reading
        self._registered = False
        self._waiter: Any = None

    async def wait(self) -> None:
        if self._waiter is not None:
            raise RuntimeError(f"another task is already waiting on fd {self._fd}")
        waiter = self._waiter = self._loop.create_future()
        if not self._registered:
            if self._reading:
                self._loop.add_reader(self._fd, self._ready)
            else:
                self._loop.add_writer(self._fd, self._ready)
            self._registered = True
        try:
            await waiter
        finally:
            self._waiter = None

    def _ready(self) -> None:
        waiter = self._waiter
        if waiter is None:
            self._unregister()
            return
        self._waiter = None
        if not waiter.done():
            waiter.set_result(None)

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

    async def wait_readable(self, fd: int) -> None:
        await self._lowlevel.wait_readable(fd)

    async def wait_writable(self, fd: int) -> None:
        await self._lowlevel.wait_writable(fd)

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
