"""Serving an existing stdio agent remotely: one subprocess per connection.

``bridge(command)`` is a ``serve=`` function for the ASGI app: each remote
connection starts ``command`` and copies its messages both ways, bytes as
they are (no decoding beyond the server's own routing). When the client
goes away the agent's stdin is closed, and the subprocess is shut down the
usual way (see ``Subprocess``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio

from ..._io.backend import current_backend
from ..._io.channel import Channel, ChannelError
from ..base import Transport
from ..subprocess import Subprocess
from .server import ServeConnection

__all__ = ("bridge",)

log = logging.getLogger("acp_fast.http")


def bridge(command: Sequence[str], **subprocess_options: Any) -> ServeConnection:
    """A ``serve=`` function running ``command`` (argv) for each connection."""
    argv = list(command)
    if not argv:
        raise ValueError("bridge needs a command to run")

    async def serve(transport: Transport) -> None:
        backend = current_backend()
        agent = Subprocess(argv, **subprocess_options)
        async with transport._open(backend) as remote, agent._open(backend) as local:
            async with anyio.create_task_group() as group:
                group.start_soon(backend.run)
                group.start_soon(remote.run)
                group.start_soon(local.run)
                group.start_soon(_copy, remote, local)
                await _copy(local, remote)  # the agent's output ended: so did it
                group.cancel_scope.cancel()

    return serve


async def _copy(source: Channel, target: Channel) -> None:
    try:
        while True:
            data = await source.receive()
            if not data:
                await target.close_write()
                return
            target.write(data)
            await target.drain()  # paced by the slower side
    except ChannelError as exc:
        # One side is gone (a client that dropped its socket, an agent that
        # exited): the bridge ends and the agent is stopped, which is how a
        # connection ends (docs/remote.md, "Serving"), not a failure to log.
        log.debug("a bridged connection ended: %s", exc)
