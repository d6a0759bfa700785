"""``acp-fast conductor`` on stdio: the chain never outlives its client.

Two ways the client side ends without the conductor reading EOF:

* a signal (SIGTERM, SIGINT): the chain is cancelled, and each component
  process is shut down in stages by its transport (stdin closed, a grace
  period, SIGTERM, SIGKILL), so no child is left behind;
* the client closes its end of a pipe while the conductor is not reading
  (a component that never reads holds the chain back, docs/proxies.md): the
  pipe's hang-up is seen beside the reading, and if the chain has not ended
  a grace period later it is shut down the same way.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import stat
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

__all__ = ("serve_until_client_ends",)

log = logging.getLogger("acp_fast")

_HANGUP = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)


async def serve_until_client_ends(
    serve: Callable[[], Awaitable[object]], grace_period: float, input_fd: int = 0
) -> int | None:
    """Run ``serve()``; returns the number of the signal that ended it, if
    one did."""
    signalled: list[int] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            # Watching before any component starts: a signal never finds a
            # child without its shutdown in place.
            await group.start(_watch_signals, scope, signalled)
            if _can_hang_up(input_fd):
                group.start_soon(_watch_hangup, scope, input_fd, grace_period)
            await serve()
            group.cancel_scope.cancel()
    return signalled[0] if signalled else None


async def _watch_signals(
    scope: anyio.CancelScope,
    signalled: list[int],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            log.warning("conductor: %s, shutting the chain down", signal.Signals(signum).name)
            signalled.append(signum)
            scope.cancel()
            return


async def _watch_hangup(scope: anyio.CancelScope, fd: int, grace_period: float) -> None:
    while not await anyio.to_thread.run_sync(_hung_up, fd, 0.25):
        pass
    # The client closed its end. Normally the conductor reads on to EOF and
    # ends the chain itself; give it that long.
    await anyio.sleep(grace_period)
    log.warning("conductor: the client closed its input; shutting the chain down")
    scope.cancel()


def _can_hang_up(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _hung_up(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, getattr(select, "POLLRDHUP", 0))  # hang-ups only
    return any(events & _HANGUP for _, events in poller.poll(timeout * 1000))
