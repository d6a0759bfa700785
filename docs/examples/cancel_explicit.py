"""Cancel a request explicitly, then still await its (cooperative) answer."""

from __future__ import annotations

import anyio
from _slow_agent import backend, client_of_slow_agent

import acp_fast as acp


async def main() -> None:
    async with client_of_slow_agent() as cx:
        sent = cx.send_request(acp.UntypedMessage("slow", {}))
        sent.cancel()  # one $/cancel_request, written after the request
        sent.cancel()  # once only: nothing more is sent
        try:
            await sent
        except acp.Error as error:
            print(f"client: request {sent.id} ended with {error.code} {error.message}")


anyio.run(main, backend=backend())
