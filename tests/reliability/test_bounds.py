"""Memory stays bounded whatever a peer sends: names, batches.

A peer chooses the method names and the size of a batch. Neither may make
the connection keep memory in proportion to what was sent (docs/semantics.md
§2.2 for the handler-chain cache, §1 for batches). Memory is measured with
tracemalloc around the flood, after a round trip proves it was all handled.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.support import SIMPLE, echo_server, serving

pytestmark = pytest.mark.anyio

NAME_SIZE = 256 * 1024


class Traced:
    """Traced memory growth since construction; measure while the connection
    under test is still open (what it holds is what matters)."""

    def __init__(self) -> None:
        gc.collect()
        tracemalloc.start()
        self._before = tracemalloc.get_traced_memory()[0]

    def growth(self) -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - self._before


@pytest.fixture
def traced() -> Iterator[Traced]:
    tracer = Traced()
    try:
        yield tracer
    finally:
        tracemalloc.stop()


def distinct_name(index: int) -> str:
    return f"{index:08d}" + "m" * NAME_SIZE


async def round_trip(peer: Any, request_id: str) -> None:
    peer.send({"jsonrpc": "2.0", "id": request_id, "method": SIMPLE, "params": {"message": "x"}})
    while (await peer.receive()).get("id") != request_id:
        pass


async def test_distinct_method_names_are_not_kept(traced: Traced):
    """200 notifications and 40 requests with distinct 256 KiB method names
    (60 MB sent): the connection keeps none of them (docs/semantics.md §2.2)."""
    async with serving(echo_server()) as peer:
        for index in range(200):
            peer.send({"jsonrpc": "2.0", "method": distinct_name(index)})
        await round_trip(peer, "after-notifications")
        for index in range(40):
            peer.send({"jsonrpc": "2.0", "id": index, "method": distinct_name(index)})
            answer = await peer.receive()
            assert answer["error"]["code"] == -32601
        await round_trip(peer, "after-requests")
        assert traced.growth() < 4 * 1024 * 1024


async def test_many_distinct_short_method_names_are_bounded(traced: Traced):
    """20,000 distinct 100-character names: the cache stops at its bound."""
    async with serving(echo_server()) as peer:
        peer.channel.write(
            b"".join(
                orjson.dumps({"jsonrpc": "2.0", "method": f"n/{index:0100d}"}) + b"\n"
                for index in range(20_000)
            )
        )
        await round_trip(peer, "after")
        assert traced.growth() < 4 * 1024 * 1024
