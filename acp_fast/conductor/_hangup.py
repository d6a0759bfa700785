"""Seeing the client end while the conductor is not reading (docs/proxies.md).

A component that never reads holds the chain back: the conductor stops
reading its client, so the client's EOF is never read. When the client's
input is a pipe or a socket, its hang-up is seen beside the reading instead,
and if the chain has not ended a grace period later it is shut down (each
component process in stages by its transport: stdin closed, a grace period,
SIGTERM, SIGKILL), so no child is left behind.
"""

from __future__ import annotations

import logging
import os
import select
import stat

import anyio

from .._transports import Transport
from .._transports.base import FdTransport, _Stdio

log = logging.getLogger("acp_fast.conductor")

_HANGUP = select.POLLHUP | select.POLLERR | select.POLLNVAL | getattr(select, "POLLRDHUP", 0)


def watched_input(transport: Transport) -> int | None:
    """The descriptor the client's messages arrive on, if its hang-up can be
    seen (a pipe or a socket), else None."""
    if isinstance(transport, _Stdio):
        fd: int | None = 0
    elif isinstance(transport, FdTransport):
        fd = transport.read_fd
    else:
        fd = None
    if fd is None:
        return None
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


async def watch_hangup(scope: anyio.CancelScope, fd: int, grace_period: float) -> None:
    """Cancel ``scope`` once ``fd`` has hung up and a grace period passed."""
    while not await anyio.to_thread.run_sync(_hung_up, fd, 0.25):
        pass
    # The client closed its end. Normally the conductor reads on to EOF and
    # ends the chain itself; give it that long.
    await anyio.sleep(grace_period)
    log.warning("conductor: the client closed its input; shutting the chain down")
    scope.cancel()


def _hung_up(fd: int, timeout: float) -> bool:
    poller = select.poll()
    poller.register(fd, getattr(select, "POLLRDHUP", 0))  # hang-ups only
    return any(events & _HANGUP for _, events in poller.poll(timeout * 1000))
