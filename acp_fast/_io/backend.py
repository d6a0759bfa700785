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
  the dispatch loop (which would deadlock);
* ``cancel``, an anyio cancel scope's ``cancel()`` without the cost anyio
  adds on asyncio (formatting the current task into the reason, 15 µs: more
  than the rest of a ``$/cancel_request``'s way to its answer).

Everything here runs on the event loop's thread, except ``call_soon_threadsafe``.
Cancellation is the backend's own (anyio cancel scopes deliver through it).
The backends live in ``backend_asyncio`` and ``backend_trio``, each imported
only once its event loop runs.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

__all__ = ("Backend", "Waiter", "current_backend")


class Waiter(Protocol):
    """A one-shot slot a single task waits on: ``await waiter.wait()``, or
    ``await waiter`` itself (one call less, for the per-request path)."""

    def set(self) -> None: ...

    def wait(self) -> Awaitable[None]: ...

    def __await__(self) -> Generator[Any, None, None]: ...


class Backend(Protocol):
    name: str

    def current_task(self) -> object: ...

    def new_waiter(self) -> Waiter: ...

    def wake(self, waiter: Waiter) -> None:
        """``waiter.set()``, or as soon as this backend can do it cheaper."""

    def call_soon(self, callback: Callable[[], object]) -> object: ...

    def call_soon_threadsafe(self, callback: Callable[[], object]) -> None: ...

    def in_loop_thread(self) -> bool: ...

    def cancel(self, scope: Any) -> None:
        """``scope.cancel()`` for an anyio cancel scope, as cheap as possible.

        Only for a scope the current task is not in (another task's: the
        scope of a request that detached from the dispatch loop, or of a
        worker, cancelled by the loop)."""

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
            from .backend_trio import TrioBackend

            return TrioBackend()
    asyncio = sys.modules.get("asyncio")  # not imported: no asyncio loop can be running
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            # Imported here: asyncio costs 30 ms to import, half of acp_fast's
            # import time, and a trio program never needs it.
            from .backend_asyncio import AsyncioBackend

            return AsyncioBackend()
    raise RuntimeError("acp_fast needs a running asyncio or trio event loop")
