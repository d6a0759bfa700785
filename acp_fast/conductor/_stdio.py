"""``acp-fast conductor`` on stdio: the chain never outlives its client.

A signal (SIGTERM, SIGINT) cancels the chain, and each component process is
shut down in stages by its transport (stdin closed, a grace period, SIGTERM,
SIGKILL), so no child is left behind. The client closing its input while the
conductor is not reading is seen by ``Conductor.serve`` itself.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

__all__ = ("serve_until_client_ends",)

log = logging.getLogger("acp_fast")


async def serve_until_client_ends(serve: Callable[[], Awaitable[object]]) -> int | None:
    """Run ``serve()``; returns the number of the signal that ended it, if
    one did."""
    signalled: list[int] = []
    failure: Exception | None = None
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            # Watching before any component starts: a signal never finds a
            # child without its shutdown in place.
            await group.start(_watch_signals, scope, signalled)
            try:
                await serve()
            except Exception as exc:
                # Raised after the group, not wrapped in an ExceptionGroup:
                # run_conductor reports it in one line.
                failure = exc
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
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
