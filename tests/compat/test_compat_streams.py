"""The official SDK's own connection forms: asyncio streams, a background task.

``acp.run_agent(agent, writer, reader)`` and ``acp.connect_to_agent(client,
writer, reader)`` take asyncio streams and (for the client) run in a task of
the running asyncio loop, so these tests drive asyncio themselves; on trio
the scoped form (``open_connection``) is the one that works, and
``connect_to_agent`` says so.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import trio

import acp_fast.compat as acp
from acp_fast.compat.schema import InitializeResponse
from acp_fast.testing import socket_pair


class EchoAgent:
    async def initialize(self, protocol_version: int, **_: Any) -> Any:
        return InitializeResponse(protocol_version=protocol_version)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"method": method, **params}


class QuietClient:
    pass


def test_run_agent_and_connect_to_agent_over_asyncio_streams() -> None:
    async def main() -> tuple[Any, Any]:
        agent_sock, client_sock = socket.socketpair()
        agent_reader, agent_writer = await asyncio.open_connection(sock=agent_sock)
        client_reader, client_writer = await asyncio.open_connection(sock=client_sock)
        served = asyncio.ensure_future(acp.run_agent(EchoAgent(), agent_writer, agent_reader))
        conn = acp.connect_to_agent(QuietClient(), client_writer, client_reader)
        try:
            init = await asyncio.wait_for(conn.initialize(protocol_version=1), 10)
            echoed = await asyncio.wait_for(conn.ext_method("x/y", {"n": 1}), 10)
        finally:
            await conn.close()
            client_writer.close()
            await asyncio.wait_for(served, 10)  # the agent saw EOF and returned
        return init, echoed

    init, echoed = asyncio.run(main())
    assert init.protocol_version == 1
    assert echoed == {"method": "x/y", "n": 1}


def test_connect_to_agent_outside_asyncio_names_the_scoped_form() -> None:
    async def main() -> None:
        _, client_end = socket_pair()
        acp.connect_to_agent(QuietClient(), client_end)

    with pytest.raises(RuntimeError, match="open_connection|spawn_agent_process"):
        trio.run(main)
