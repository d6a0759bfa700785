"""A connection under test, facing a raw NDJSON peer that the test plays.

``facing_raw_peer(builder)`` yields ``(cx, peer)``. What cx sends is read
with ``peer.receive()``; ``WireLog`` keeps everything read, in order, so a
test can assert the exact sequence on the wire ("the request, then one
$/cancel_request") rather than just outcomes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.support import SIMPLE, RawPeer, echo

MARK = "test/mark"


class WireLog:
    """Messages the peer read from the connection, in wire order."""

    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer
        self.messages: list[Any] = []

    async def next(self) -> Any:
        message = await self.peer.receive()
        self.messages.append(message)
        return message

    async def until_mark(self, cx: Any, label: str = "") -> list[Any]:
        """Everything cx sent before now: cx sends a marker, read up to it."""
        cx.send_notification(acp.UntypedMessage(MARK, {"label": label}))
        seen = []
        while True:
            message = await self.next()
            if message.get("method") == MARK and message["params"]["label"] == label:
                return seen
            seen.append(message)

    def cancels(self) -> list[Any]:
        return [
            m["params"]["requestId"] for m in self.messages if m.get("method") == "$/cancel_request"
        ]


def is_cancel(message: Any, request_id: Any) -> bool:
    return message.get("method") == "$/cancel_request" and message["params"] == {
        "requestId": request_id
    }


@asynccontextmanager
async def facing_raw_peer(
    builder: acp.Builder[Any] | None = None,
) -> AsyncIterator[tuple[Any, RawPeer, WireLog]]:
    """Yield (cx, peer, log): cx connected (connect) to a raw peer.

    The builder gets an echo handler for ``simple_method`` unless given, so
    the peer can run barriers toward cx: ``await barrier_from_peer(peer)``.
    """
    if builder is None:
        builder = acp.UntypedRole.builder().name("under-test").on_receive_request(echo, SIMPLE)
    ours, theirs = memory_pair()
    async with RawPeer(theirs) as peer, builder.connect(ours) as cx:
        yield cx, peer, WireLog(peer)


async def barrier_from_peer(log: WireLog, label: str = "b") -> list[Any]:
    """The peer asks cx an echo round trip: once answered, everything the
    peer wrote before has been dispatched by cx. Returns what cx sent before
    the answer (kept in the log too)."""
    request_id = f"barrier-{label}"
    log.peer.send(
        {"jsonrpc": "2.0", "id": request_id, "method": SIMPLE, "params": {"message": label}}
    )
    seen = []
    while True:
        message = await log.next()
        if message.get("id") == request_id and "result" in message:
            return seen
        seen.append(message)


def respond(peer: RawPeer, request_id: Any, result: Any = None, error: Any = None) -> None:
    if error is not None:
        peer.send({"jsonrpc": "2.0", "id": request_id, "error": error})
    else:
        peer.send({"jsonrpc": "2.0", "id": request_id, "result": result})
