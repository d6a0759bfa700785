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

import acp_fast as acp
from acp_fast._async.inbound import MAX_BATCH_ENTRIES
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


def echo_request(request_id: Any, message: str = "x") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": SIMPLE, "params": {"message": message}}


TOO_MANY = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {
        "code": -32600,
        "message": "Invalid request",
        "data": {"reason": "batch_too_large", "limit": MAX_BATCH_ENTRIES},
    },
}


async def test_a_batch_at_the_entry_limit_is_answered_in_full():
    async with serving(echo_server()) as peer:
        peer.send([echo_request(index) for index in range(MAX_BATCH_ENTRIES)])
        answers = await peer.receive()
        assert [a["id"] for a in answers] == list(range(MAX_BATCH_ENTRIES))
        await round_trip(peer, "after")


async def test_a_batch_over_the_entry_limit_is_refused_whole():
    """docs/semantics.md §1.5: one -32600, and no entry runs."""
    ran: list[Any] = []

    async def record(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        ran.append(message.params)
        responder.respond({})

    server = echo_server().on_receive_request(record, "record")
    async with serving(server) as peer:
        peer.send(
            [{"jsonrpc": "2.0", "id": i, "method": "record"} for i in range(MAX_BATCH_ENTRIES + 1)]
        )
        assert await peer.receive() == TOO_MANY
        await round_trip(peer, "after")
    assert ran == []


async def test_a_batch_of_millions_of_tiny_entries_costs_little(traced: Traced):
    """2M one-byte entries (4 MB in) are refused without decoding them: no
    answer per entry, and little memory at the peak."""
    line = b"[" + b"1," * 1_999_999 + b"1]"
    async with serving(echo_server()) as peer:
        tracemalloc.reset_peak()
        peer.send(line)
        assert await peer.receive() == TOO_MANY
        await round_trip(peer, "after")
        peak = tracemalloc.get_traced_memory()[1]
    assert peak < 32 * 1024 * 1024, peak


async def test_a_batch_answer_is_bounded_by_the_message_size_limit():
    """Answers that would make the array longer than the limit are replaced,
    in their slots, by -32603 errors under their ids (docs/semantics.md §1.5)."""
    limit = 64 * 1024
    big = "b" * (limit // 3)

    async def blob(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond({"result": f"echo: {big}"})

    server = echo_server().max_message_size(limit).on_receive_request(blob, "blob")
    async with serving(server) as peer:
        peer.send(
            [{"jsonrpc": "2.0", "id": index, "method": "blob"} for index in range(4)]
            + [echo_request(4)]
        )
        line = await peer.receive_line()
        assert len(line) <= limit + 200
        answers = orjson.loads(line)
        assert [a["id"] for a in answers] == [0, 1, 2, 3, 4]
        assert answers[0]["result"] == {"result": f"echo: {big}"}
        assert answers[1]["result"] == {"result": f"echo: {big}"}
        for answer in answers[2:4]:
            assert answer["error"] == {
                "code": -32603,
                "message": "Internal error",
                "data": {"reason": "batch_answer_too_large", "limit": limit},
            }
        assert answers[4]["result"] == {"result": "echo: x"}
        await round_trip(peer, "after")
