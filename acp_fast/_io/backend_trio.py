"""The trio backend (see ``backend`` for what a backend provides)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from .backend import Waiter

__all__ = ("TrioBackend",)


class TrioBackend:
    name = "trio"

    def __init__(self) -> None:
        import trio

        self._lowlevel = trio.lowlevel
        self._token = trio.lowlevel.current_trio_token()
        self._thread = threading.get_ident()
        self._soon: deque[Callable[[], object]] = deque()
        self._runner: Any = None  # the parked runner task, when idle

    def current_task(self) -> object:
        return self._lowlevel.current_task()

    def new_waiter(self) -> Waiter:
        return _TrioWaiter(self._lowlevel)

    def wake(self, waiter: Waiter) -> None:
        waiter.set()

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

    def cancel(self, scope: Any) -> None:
        scope.cancel()

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

    def __await__(self) -> Generator[Any, None, None]:
        return self.wait().__await__()
