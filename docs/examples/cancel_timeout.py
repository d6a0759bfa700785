"""A timeout on the await cancels the request on the wire, too."""

from __future__ import annotations

import anyio
from _slow_agent import backend, client_of_slow_agent

import acp_fast as acp


async def main() -> None:
    async with client_of_slow_agent() as cx:
        try:
            with anyio.fail_after(0.2):
                await cx.send_request(acp.UntypedMessage("slow", {}))
        except TimeoutError:
            print("client: gave up after 0.2 s; the agent was told to stop")


anyio.run(main, backend=backend())
