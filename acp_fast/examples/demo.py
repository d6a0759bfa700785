"""``acp-fast demo``: a client drives the example agent in a real subprocess."""

from __future__ import annotations

import sys
from typing import Any

import anyio

import acp_fast as acp


async def demo() -> None:
    agent = acp.Subprocess([sys.executable, "-m", "acp_fast", "example-agent"])
    client = acp.Client.builder().name("demo-client")

    @client.on_receive_notification("demo/chunk")
    async def chunk(message: acp.UntypedMessage, cx: Any) -> None:
        print(f"  chunk: {message.params['text']}")

    async with client.connect(agent) as cx:
        assert agent.process is not None
        print(f"acp_fast demo (core: {acp_fast_core()}), agent pid {agent.process.pid}")
        reply = await cx.send_request(acp.UntypedMessage("demo/echo", {"hello": "agent"}))
        print(f"request  -> {reply}")
        print("stream   ->")
        done = await cx.send_request(
            acp.UntypedMessage("demo/stream", {"text": "tokens stream in order"})
        )
        print(f"  {done}")
        slow = cx.send_request(acp.UntypedMessage("demo/slow", {}))
        slow.cancel()
        try:
            await slow
        except acp.Error as error:
            print(f"cancelled -> {error.code} {error.message}")
    print(f"agent exited with {agent.returncode}")


def acp_fast_core() -> str:
    from acp_fast._core import IMPLEMENTATION

    return "compiled" if IMPLEMENTATION == "c" else "pure Python"


def run_demo(backend: str = "asyncio") -> int:
    anyio.run(demo, backend=backend)
    return 0
