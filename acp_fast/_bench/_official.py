"""The same workloads on the official Python SDK (``agent-client-protocol``).

Written the way that SDK's own documentation and benchmark method
(python-sdk-anchor §5) use it: ``acp.run_agent`` / ``acp.connect_to_agent``
over ``asyncio.open_connection`` on a socketpair in one process, and
``acp.spawn_agent_process`` over stdio. Echo is ``ext_method`` (no pydantic
on the params, like acp_fast's untyped echo); the stream sends typed
``session_update`` notifications built with the SDK's helper, and the
client's handler reads each chunk's text.

Only ever imported when the official SDK is installed (``acp-fast[bench]``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from contextlib import AbstractAsyncContextManager
from typing import Any

import acp

from ._common import (
    CHUNK_PARAMS,
    SESSION_ID,
    best_per_call,
    measure_round_trips,
    measure_stream,
)

__all__ = ("PEER", "VERSION", "codec_costs", "run_peer", "run_workload")

#: The ``--peer`` the stdio workload spawns (``_compat`` runs this code on
#: acp_fast.compat, with its own peer).
PEER = "official"

try:
    from importlib.metadata import version as _version

    VERSION = _version("agent-client-protocol")
except Exception:  # pragma: no cover - metadata missing
    VERSION = "?"


class BenchAgent:
    """``_bench/echo`` answers its params; ``_bench/stream`` streams chunks."""

    def __init__(self) -> None:
        self._conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> Any:
        return acp.InitializeResponse(protocol_version=protocol_version)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "bench/echo":
            return params
        if method == "bench/stream":
            session_id, count = params["sessionId"], params["n"]
            for i in range(count):
                await self._conn.session_update(
                    session_id=session_id, update=acp.update_agent_message_text(f"token {i} ")
                )
            return {"sent": count}
        raise acp.RequestError.method_not_found(f"_{method}")


class BenchClient:
    """Counts the session updates it is handed, reading each chunk's text."""

    def __init__(self) -> None:
        self.count = 0
        self.chars = 0

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        content = getattr(update, "content", None)
        text = getattr(content, "text", None)
        if text is not None:
            self.chars += len(text)
        self.count += 1

    def received(self) -> int:
        return self.count


def run_peer() -> None:
    """Serve the bench agent on stdio (the child of the stdio workload)."""
    agent: Any = BenchAgent()  # duck-typed: the SDK's Agent is a Protocol
    asyncio.run(acp.run_agent(agent))


async def _in_process(client: Any) -> tuple[Any, asyncio.Task[None], list[Any]]:
    agent_sock, client_sock = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
    client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
    agent: Any = BenchAgent()
    agent_task = asyncio.ensure_future(acp.run_agent(agent, agent_writer, agent_reader))
    conn = acp.connect_to_agent(client, client_writer, client_reader)
    return conn, agent_task, [agent_writer, client_writer]


async def run_workload(
    workload: str, transport: str, concurrency: int, warmup: float, seconds: float
) -> float:
    """One workload on a fresh connection; returns its rate per second."""
    counter = BenchClient()
    client: Any = counter  # duck-typed: the SDK's Client is a Protocol
    spawned: AbstractAsyncContextManager[Any] | None = None
    agent_task: asyncio.Task[None] | None = None
    writers: list[Any] = []
    if transport == "socket":
        conn, agent_task, writers = await _in_process(client)
    elif transport == "stdio":
        command = ["-m", "acp_fast._bench._worker", "--peer", PEER]
        spawned = acp.spawn_agent_process(client, sys.executable, *command)
        conn, _process = await spawned.__aenter__()
    else:
        raise ValueError(f"the official SDK has no {transport!r} transport here")
    try:
        await conn.initialize(protocol_version=1)

        async def send_echo(i: int) -> object:
            return await conn.ext_method("bench/echo", {"i": i})

        async def run_stream(count: int) -> object:
            return await conn.ext_method("bench/stream", {"sessionId": SESSION_ID, "n": count})

        if workload == "rt":
            return await measure_round_trips(send_echo, concurrency, warmup, seconds)
        if workload == "notify":
            return await measure_stream(run_stream, counter.received, warmup, seconds)
        raise ValueError(f"unknown workload {workload!r}")
    finally:
        if spawned is not None:
            await spawned.__aexit__(None, None, None)
        else:
            await conn.close()
            for writer in writers:
                writer.close()
            if agent_task is not None:
                agent_task.cancel()
                await asyncio.gather(agent_task, return_exceptions=True)


def codec_costs() -> dict[str, float]:
    """The SDK's own code paths (python-sdk-anchor §5.1): json.loads +
    model_validate in, serialize_params + envelope + json.dumps out."""
    from acp.schema import SessionNotification
    from acp.utils import serialize_params

    def decode() -> Any:
        return SessionNotification.model_validate(json.loads(CHUNK_PARAMS))

    message = decode()

    def encode() -> bytes:
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "method": "session/update"}
        envelope["params"] = serialize_params(message)
        return json.dumps(envelope, separators=(",", ":")).encode()

    return {"decode": best_per_call(decode), "encode": best_per_call(encode)}
