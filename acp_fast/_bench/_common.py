"""What both SDKs' workloads share: names, sample messages, the timing loops.

Every workload is written once against tiny adapters (``send_echo``,
``run_stream``) so acp_fast and the official SDK run exactly the same loop,
with the same warm-up, the same window and the same garbage-collector policy.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

__all__ = (
    "CHUNK_PARAMS",
    "ECHO",
    "INITIALIZE_PARAMS",
    "SESSION_ID",
    "SLOW",
    "STREAM",
    "STREAM_BURST",
    "TOOL_CALL_UPDATE_PARAMS",
    "Window",
    "best_per_call",
    "measure_round_trips",
    "measure_stream",
)

# Extension methods (the official SDK's ext_method prefixes "_" on the wire).
ECHO: Final = "_bench/echo"
STREAM: Final = "_bench/stream"
SLOW: Final = "_bench/slow"  # answered only when cancelled (-32800)
SESSION_ID: Final = "sess_bench"
# Notifications per _bench/stream request: small enough that the official SDK
# finishes several bursts in a short window, large enough that the request
# itself is noise (one round trip per 1,000 notifications).
STREAM_BURST: Final = 1000

# The typed-codec samples: the params of real messages, fields in the order the
# encoder writes them (so each sample re-encodes to itself).
CHUNK_PARAMS: Final = (
    b'{"sessionId":"sess_abc123def456","update":{"sessionUpdate":"agent_message_chunk",'
    b'"content":{"type":"text","text":"I\'ll start by reading the configuration file '
    b'to see how the server is set up."}}}'
)
TOOL_CALL_UPDATE_PARAMS: Final = (
    b'{"sessionId":"sess_abc123def456","update":{"sessionUpdate":"tool_call_update",'
    b'"toolCallId":"call_001","kind":"read","status":"in_progress",'
    b'"title":"Reading configuration file","content":[{"type":"content","content":'
    b'{"type":"text","text":"Found 3 configuration files in the project root."}}],'
    b'"locations":[{"path":"/home/user/project/config.json","line":12}],'
    b'"rawInput":{"path":"/home/user/project/config.json","limit":200}}}'
)
INITIALIZE_PARAMS: Final = (
    b'{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,'
    b'"writeTextFile":true},"terminal":true},"clientInfo":{"name":"bench-client",'
    b'"version":"1.0.0","title":"Benchmark client"}}'
)


class Window:
    """Warm up, then count completions over a timed window.

    ``run(count)`` returns how much ``count()`` grew per second inside the
    window (by default ``done``, which the workload bumps). The collector is collected and frozen before the
    window (startup objects then never get scanned again), the same for every
    SDK, and stays enabled: allocation-driven collections are part of the cost.
    """

    def __init__(self, warmup: float, seconds: float) -> None:
        self.warmup = warmup
        self.seconds = seconds
        self.done = 0
        self.stop = False

    async def run(self, count: Callable[[], int] | None = None) -> float:
        if count is None:
            count = self._done
        await anyio.sleep(self.warmup)
        gc.collect()
        gc.freeze()
        start_count, start = count(), time.perf_counter()
        await anyio.sleep(self.seconds)
        end_count, end = count(), time.perf_counter()
        self.stop = True
        gc.unfreeze()
        return (end_count - start_count) / (end - start)

    def _done(self) -> int:
        return self.done


async def measure_round_trips(
    send_echo: Callable[[int], Awaitable[object]],
    concurrency: int,
    warmup: float,
    seconds: float,
) -> float:
    """Round trips per second with ``concurrency`` tasks each awaiting in a loop."""
    window = Window(warmup, seconds)

    async def caller() -> None:
        i = 0
        while not window.stop:
            await send_echo(i)
            window.done += 1
            i += 1

    rate = 0.0
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(caller)
        rate = await window.run()
    return rate


async def measure_stream(
    run_stream: Callable[[int], Awaitable[object]],
    received: Callable[[], int],
    warmup: float,
    seconds: float,
) -> float:
    """Notifications per second, received and decoded by the client's handler.

    ``run_stream(n)`` asks the agent for ``n`` notifications and returns when
    its answer came; ``received()`` counts what the handler saw. A burst is
    complete only when both happened, so the rate is "handled", not "sent".
    """
    window = Window(warmup, seconds)

    async def streamer() -> None:
        while not window.stop:
            expected = received() + STREAM_BURST
            await run_stream(STREAM_BURST)
            # The official SDK may still be running handlers when the answer
            # comes; its counter has no event to wait on, so poll it.
            while received() < expected:  # noqa: ASYNC110
                await anyio.sleep(0.0002)

    rate = 0.0
    async with anyio.create_task_group() as group:
        group.start_soon(streamer)
        rate = await window.run(received)
    return rate


def best_per_call(function: Callable[[], object], repeat: int = 5) -> float:
    """Seconds per call of ``function``: the best of ``repeat`` loops of ~20 ms."""
    start = time.perf_counter()
    for _ in range(100):
        function()
    number = max(100, int(0.02 / max(time.perf_counter() - start, 1e-9) * 100))
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            function()
        best = min(best, time.perf_counter() - start)
    return best / number
