"""Scenarios shared by the transport tests (run against any pair of ends)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

import acp_fast as acp
from tests.transports.peer import BIG_CONTENT, COPY_PATH, agent_builder, client_builder

T = TypeVar("T")

TIMEOUT = 20.0  # a bound, never a delay: 10 MB each way takes well under 1 s
PEER = Path(__file__).resolve().parent / "peer.py"


def peer_cmd(backend: str, *options: str) -> list[str]:
    """argv of the stdio peer agent (same core: the environment is inherited)."""
    return [sys.executable, str(PEER), "--backend", backend, *options]


class Peer:
    """A client connection to the peer agent (tests/transports/peer.py)."""

    def __init__(self, cx: acp.ConnectionTo[Any], written: dict[str, str]) -> None:
        self.cx = cx
        self.written = written

    async def call(self, method: str, params: Any = None) -> Any:
        with anyio.fail_after(TIMEOUT):
            return await self.cx.send_request(acp.UntypedMessage(method, params or {}))

    async def echo(self, value: Any = "ping") -> None:
        assert await self.call("_t/echo", {"value": value}) == {"value": value}

    async def big(self) -> None:
        """10 MB from us to the agent (an fs/read_text_file answer), then the
        same 10 MB back (fs/write_text_file), compared."""
        assert await self.call("_t/big") == {"length": len(BIG_CONTENT)}
        copy = self.written.pop(COPY_PATH)
        assert len(copy) == len(BIG_CONTENT)
        assert copy == BIG_CONTENT


async def as_client(transport: acp.Transport, main: Callable[[Peer], Awaitable[T]]) -> T:
    """Run ``main(peer)`` on a client connection over ``transport``."""
    written: dict[str, str] = {}

    async def run(cx: acp.ConnectionTo[Any]) -> T:
        return await main(Peer(cx, written))

    return await client_builder(written).connect_with(transport, run)


async def in_process(
    agent_end: acp.Transport, client_end: acp.Transport, main: Callable[[Peer], Awaitable[T]]
) -> T:
    """The peer agent served on ``agent_end``, ``main`` run as its client.

    The client's end must be one the client closes (its peer then reads EOF).
    """
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(agent_builder().connect_to, agent_end)
            result = await as_client(client_end, main)
            # The client closed its end: the agent reads EOF and returns by itself.
    return result
