"""The peer the cancellation examples talk to, in the same process.

It answers ``slow`` only when that request is cancelled (with -32800), and
reports each ``$/cancel_request`` it sees, so the examples can show exactly
what went over the wire.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

import acp_fast as acp
from acp_fast.testing import memory_pair


def slow_agent(report: Callable[[str], None] = print) -> acp.Builder[Any]:
    agent = acp.Agent.builder().name("slow-agent")

    @agent.on_receive_request("slow")
    async def slow(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        async def work() -> None:
            try:
                result = await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
                responder.respond(result)
            except acp.Error as error:
                responder.respond_with_error(error)

        cx.spawn(work)  # handlers run in the dispatch loop: long work goes in a task

    @agent.on_receive_notification("$/cancel_request")
    async def observe(message: acp.UntypedMessage, cx: Any) -> None:
        report(f"agent: $/cancel_request for request {message.params['requestId']}")

    return agent


@asynccontextmanager
async def client_of_slow_agent() -> AsyncIterator[Any]:
    """A client connection to a slow agent running in this process."""
    client_side, agent_side = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(slow_agent().connect_to, agent_side)
        async with acp.Client.builder().connect(client_side) as cx:
            yield cx


def backend() -> str:
    return sys.argv[1] if len(sys.argv) > 1 else "asyncio"
