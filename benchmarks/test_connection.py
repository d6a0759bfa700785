"""Whole connections: round trips, notification streams, cancellation storms.

The client talks to the bench agent of ``acp-fast bench`` (``_bench/echo``
answers its params, ``_bench/stream`` streams typed agent_message_chunk
notifications, ``_bench/slow`` answers -32800 once cancelled) over:

* ``socket``: a socketpair in this process, the NDJSON byte path of stdio
  through the kernel (``acp_fast.testing.socket_pair``);
* ``memory``: the in-memory link (``acp_fast.testing.memory_pair``), framing
  and all but no system calls;
* ``stdio``: the agent in a child process, over its stdin and stdout.

Each round runs a batch of operations on one open connection (the event loop
runs in a thread behind an anyio portal); ``extra_info["per_second"]`` is the
rate of the median round, ``core`` and ``backend`` say what ran. Switch the
core with ``ACP_FAST_NO_EXTENSIONS=1``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal

import acp_fast as acp
from acp_fast._bench._common import ECHO, SESSION_ID, SLOW, STREAM
from acp_fast._bench._fast import Counter, connected
from benchmarks.conftest import record_rate

ROUNDS = 5


@pytest.fixture
def counter() -> Counter:
    return Counter()


def _open(portal: BlockingPortal, transport: str, backend: str, counter: Counter) -> Any:
    return portal.wrap_async_context_manager(connected(transport, backend, counter))


@pytest.fixture(params=["socket", "memory", "stdio"])
def cx(
    request: pytest.FixtureRequest, portal: BlockingPortal, backend: str, counter: Counter
) -> Iterator[Any]:
    with _open(portal, str(request.param), backend, counter) as connection:
        yield connection


async def _round_trips(cx: Any, concurrency: int, total: int) -> None:
    async def caller(count: int) -> None:
        for i in range(count):
            await cx.send_request(acp.UntypedMessage(ECHO, {"i": i}))

    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(caller, total // concurrency)


@pytest.mark.parametrize("concurrency", [1, 64])
def test_round_trips(
    benchmark: Any,
    portal: BlockingPortal,
    cx: Any,
    concurrency: int,
    connection_info: dict[str, Any],
) -> None:
    total = 2048
    portal.call(_round_trips, cx, concurrency, 256)  # warm-up
    benchmark.pedantic(
        portal.call, (_round_trips, cx, concurrency, total), rounds=ROUNDS, iterations=1
    )
    connection_info["concurrency"] = concurrency
    record_rate(benchmark, total)


@pytest.mark.parametrize("transport", ["socket", "memory"])
def test_notifications(
    benchmark: Any,
    portal: BlockingPortal,
    backend: str,
    counter: Counter,
    transport: str,
    connection_info: dict[str, Any],
) -> None:
    """Typed session/update notifications, counted by the client's handler."""
    burst = 5000

    async def stream() -> None:
        expected = counter.count + burst
        request = acp.UntypedMessage(STREAM, {"sessionId": SESSION_ID, "n": burst})
        await connection.send_request(request)
        assert counter.count == expected  # handled in order, before the answer

    with _open(portal, transport, backend, counter) as connection:
        portal.call(stream)  # warm-up
        benchmark.pedantic(portal.call, (stream,), rounds=ROUNDS, iterations=1)
    connection_info["transport"] = transport
    record_rate(benchmark, burst)


@pytest.mark.parametrize("transport", ["socket", "memory"])
def test_cancellation_storm(
    benchmark: Any,
    portal: BlockingPortal,
    backend: str,
    counter: Counter,
    transport: str,
    connection_info: dict[str, Any],
) -> None:
    """Send 256 requests, cancel them all at once, collect 256 times -32800."""
    storm = 256

    async def cancel_all() -> None:
        sent = [connection.send_request(acp.UntypedMessage(SLOW, {})) for _ in range(storm)]
        for request in sent:
            request.cancel()
        for request in sent:
            with pytest.raises(acp.Error) as raised:
                await request
            assert raised.value.code == -32800

    with _open(portal, transport, backend, counter) as connection:
        portal.call(cancel_all)  # warm-up
        benchmark.pedantic(portal.call, (cancel_all,), rounds=ROUNDS, iterations=1)
    connection_info["transport"] = transport
    record_rate(benchmark, storm)
