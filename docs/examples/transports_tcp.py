"""An agent served over TCP, and a client connecting to it.

Run: python docs/examples/transports_tcp.py [asyncio|trio]
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

import acp_fast as acp


def agent() -> acp.Builder[Any]:
    builder = acp.Agent.builder()

    @builder.on_receive_request("_example/echo")
    async def echo(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond(message.params)

    return builder


async def main() -> None:
    # Port 0: any free port. The default host is the loopback interface.
    async with await acp.listen_tcp("127.0.0.1", 0) as listener:
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, agent())  # one task per peer

            async def talk(cx: acp.ConnectionTo[Any]) -> None:
                answer = await cx.send_request(acp.UntypedMessage("_example/echo", {"hi": 1}))
                print(f"client: the agent on port {listener.port} answered {answer}")

            await acp.Client.builder().connect_with(acp.tcp("127.0.0.1", listener.port), talk)
            await listener.aclose()  # serve() returns once its peers are gone
    print("server: closed")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
