"""The benchmark workloads on acp_fast: the agent peer and the client side.

The agent answers ``_bench/echo`` with its params, streams typed
``session/update`` agent_message_chunk notifications for ``_bench/stream``
(building a new typed message for each one, as a real agent does), and
answers ``_bench/slow`` only when it is cancelled, with -32800. The client
counts the typed notifications it receives, reading each chunk's text.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

import acp_fast as acp
from acp_fast import schema
from acp_fast._async._wire import encode_notification
from acp_fast.schema import v1
from acp_fast.testing import memory_pair, socket_pair

from ._common import (
    CHUNK_PARAMS,
    ECHO,
    SESSION_ID,
    SLOW,
    STREAM,
    best_per_call,
    measure_round_trips,
    measure_stream,
)

__all__ = ("Counter", "agent_builder", "codec_costs", "connected", "run_peer", "run_workload")


def agent_builder() -> acp.Builder[Any]:
    builder = acp.Agent.builder().name("bench-agent")

    async def echo(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond(message.params)

    async def stream(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        params = message.params
        session_id, count = params["sessionId"], params["n"]

        async def produce() -> None:
            for i in range(count):
                cx.send_notification(
                    v1.SessionNotification(
                        session_id=session_id,
                        update=v1.SessionUpdateAgentMessageChunk(
                            content=v1.ContentBlockText(text=f"token {i} ")
                        ),
                    )
                )
                await cx.drain()  # paced: waits only while ~1 MiB is held
            responder.respond({"sent": count})

        cx.spawn(produce)

    async def slow(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        async def answer_when_cancelled() -> None:
            await responder.cancellation().cancelled()
            responder.respond_with_error(acp.Error.request_cancelled())

        cx.spawn(answer_when_cancelled)

    builder.on_receive_request(echo, ECHO)
    builder.on_receive_request(stream, STREAM)
    builder.on_receive_request(slow, SLOW)
    return builder


def run_peer(backend: str) -> None:
    """Serve the bench agent on stdio (the child of the stdio workload)."""
    anyio.run(agent_builder().connect_to, acp.stdio(), backend=backend)


class Counter:
    """The client's typed session/update handler: counts what it is handed."""

    def __init__(self) -> None:
        self.count = 0
        self.chars = 0

    async def on_update(self, notification: v1.SessionNotification, cx: Any) -> None:
        update = notification.update
        if type(update) is v1.SessionUpdateAgentMessageChunk:
            content = update.content
            if type(content) is v1.ContentBlockText:
                self.chars += len(content.text)
        self.count += 1

    def received(self) -> int:
        return self.count


def _transport(kind: str, backend: str) -> tuple[acp.Transport | None, acp.Transport]:
    """(agent end or None for a child process, client end)."""
    if kind == "socket":
        return socket_pair()
    if kind == "memory":
        return memory_pair()
    if kind == "stdio":
        command = [sys.executable, "-m", "acp_fast._bench._worker", "--peer", "fast"]
        return None, acp.Subprocess([*command, "--backend", backend])
    raise ValueError(f"unknown transport {kind!r}")


_trace_numbers = itertools.count()


@asynccontextmanager
async def connected(
    transport: str, backend: str, counter: Counter | None = None
) -> AsyncIterator[acp.ConnectionTo[Any]]:
    """A client connected to the bench agent over ``transport``: "socket"
    (a socketpair in this process), "memory" or "stdio" (a child process)."""
    agent_end, client_end = _transport(transport, backend)
    client = acp.Client.builder().name("bench-client")
    trace_dir = os.environ.get("ACP_FAST_BENCH_TRACE_DIR")
    if trace_dir:
        name = f"bench-{os.getpid()}-{next(_trace_numbers)}-{transport}.jsons"
        client.trace(os.path.join(trace_dir, name))
    if counter is not None:
        client.on_receive_notification(counter.on_update, v1.SessionNotification)
    async with anyio.create_task_group() as group:
        if agent_end is not None:
            group.start_soon(agent_builder().connect_to, agent_end)
        async with client.connect(client_end) as cx:
            yield cx
        group.cancel_scope.cancel()


async def run_workload(
    workload: str,
    transport: str,
    concurrency: int,
    warmup: float,
    seconds: float,
    backend: str,
) -> float:
    """One workload on a fresh connection; returns its rate per second."""
    counter = Counter()
    async with connected(transport, backend, counter) as cx:

        async def send_echo(i: int) -> object:
            return await cx.send_request(acp.UntypedMessage(ECHO, {"i": i}))

        async def run_stream(count: int) -> object:
            request = acp.UntypedMessage(STREAM, {"sessionId": SESSION_ID, "n": count})
            return await cx.send_request(request)

        if workload == "rt":
            return await measure_round_trips(send_echo, concurrency, warmup, seconds)
        if workload == "notify":
            return await measure_stream(run_stream, counter.received, warmup, seconds)
        raise ValueError(f"unknown workload {workload!r}")


def codec_costs() -> dict[str, float]:
    """Seconds per typed decode of an agent_message_chunk's params, and per
    encode of the whole notification line as ``send_notification`` does it."""
    decode: Callable[[type, bytes], Any] = schema.decode
    message = decode(v1.SessionNotification, CHUNK_PARAMS)
    assert schema.encode(message) == CHUNK_PARAMS  # the sample round-trips exactly
    method = v1.SessionNotification.METHOD
    return {
        "decode": best_per_call(lambda: decode(v1.SessionNotification, CHUNK_PARAMS)),
        "encode": best_per_call(lambda: encode_notification(method, message)),
    }
