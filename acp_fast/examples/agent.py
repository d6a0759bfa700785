"""A small agent on stdio: echoes, streams notifications, honours cancellation."""

from __future__ import annotations

from typing import Any

import anyio

import acp_fast as acp


def build() -> acp.Builder[Any]:
    builder = acp.Agent.builder().name("example-agent")

    @builder.on_receive_request("demo/echo")
    async def echo(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond({"echo": message.params})

    @builder.on_receive_request("demo/stream")
    async def stream(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        words = str(message.params.get("text", "")).split()

        async def produce() -> None:
            for word in words:
                cx.send_notification(acp.UntypedMessage("demo/chunk", {"text": word}))
                await cx.drain()
            responder.respond({"chunks": len(words)})

        cx.spawn(produce)

    @builder.on_receive_request("demo/slow")
    async def slow(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        async def work() -> None:
            try:
                await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
            except acp.Error as error:
                responder.respond_with_error(error)

        cx.spawn(work)

    return builder


def run_example_agent(backend: str = "asyncio") -> int:
    anyio.run(build().connect_to, acp.stdio(), backend=backend)
    return 0
