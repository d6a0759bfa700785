"""The receiving side: stop work when the peer cancels the request."""

from __future__ import annotations

from typing import Any

import anyio
from _slow_agent import backend

import acp_fast as acp
from acp_fast.testing import memory_pair


def agent() -> acp.Builder[Any]:
    builder = acp.Agent.builder()

    @builder.on_receive_request("count")
    async def count(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        marker = responder.cancellation()

        async def work() -> int:
            total = 0
            for step in range(1_000_000):
                total += step
                await anyio.sleep(0.01)  # each await is a point where it can stop
            return total

        async def run() -> None:
            try:
                responder.respond(await marker.run_until_cancelled(work))
            except acp.Error as error:  # -32800: the work was stopped
                print(f"agent: stopped the work, answering {error.code}")
                responder.respond_with_error(error)

        cx.spawn(run)

    return builder


async def main() -> None:
    client_side, agent_side = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(agent().connect_to, agent_side)
        async with acp.Client.builder().connect(client_side) as cx:
            sent = cx.send_request(acp.UntypedMessage("count", {}))
            await anyio.sleep(0.05)
            sent.cancel()
            try:
                await sent
            except acp.Error as error:
                print(f"client: {error.message}")


anyio.run(main, backend=backend())
