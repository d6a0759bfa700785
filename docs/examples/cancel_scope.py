"""Cancelling the task (or scope) that awaits a request cancels the request."""

from __future__ import annotations

import anyio
from _slow_agent import backend, client_of_slow_agent

import acp_fast as acp


async def main() -> None:
    async with client_of_slow_agent() as cx:
        async with anyio.create_task_group() as group:

            async def ask() -> None:
                await cx.send_request(acp.UntypedMessage("slow", {}))

            group.start_soon(ask)
            await anyio.sleep(0.1)  # the user changes their mind...
            group.cancel_scope.cancel()  # ...and the request is cancelled with the task
        print("client: the task awaiting the request was cancelled")


anyio.run(main, backend=backend())
