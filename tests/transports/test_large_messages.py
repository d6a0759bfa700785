"""A 10 MB message crosses every transport, in both directions.

The peer agent asks its client for a 10 MB file (the client's
``fs/read_text_file`` answer carries it to the agent), then writes it back
(``fs/write_text_file``, to the client), and the copy is compared. The
content mixes characters JSON must escape and multi-byte UTF-8.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketAttribute

import acp_fast as acp
from acp_fast.testing import memory_pair, pipe_pair, socket_pair
from tests.transports.scenarios import Peer, as_client, in_process, peer_cmd

pytestmark = pytest.mark.anyio

Pair = tuple[acp.Transport, acp.Transport]


@asynccontextmanager
async def tcp_pair(tmp_path: Path) -> AsyncIterator[Pair]:
    async with await acp.listen_tcp("127.0.0.1", 0) as listener:
        client_end = acp.tcp("127.0.0.1", listener.port)
        yield _Accepting(listener), client_end


@asynccontextmanager
async def unix_pair(tmp_path: Path) -> AsyncIterator[Pair]:
    path = tmp_path / "acp.sock"
    async with await acp.listen_unix(path) as listener:
        yield _Accepting(listener), acp.unix(path)


@asynccontextmanager
async def anyio_tcp_pair(tmp_path: Path) -> AsyncIterator[Pair]:
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(SocketAttribute.local_port)
        client = await anyio.connect_tcp("127.0.0.1", port)
        server = await listener.listeners[0].accept()  # type: ignore[attr-defined]
        yield acp.ByteStreams(server, server), acp.ByteStreams(client, client)


@asynccontextmanager
async def anyio_unix_pair(tmp_path: Path) -> AsyncIterator[Pair]:
    path = tmp_path / "anyio.sock"
    async with await anyio.create_unix_listener(path) as listener:
        client = await anyio.connect_unix(path)
        server = await listener.accept()
        yield acp.ByteStreams(server, server), acp.ByteStreams(client, client)


@asynccontextmanager
async def simple(make: Callable[[], Pair]) -> AsyncIterator[Pair]:
    yield make()


class _Accepting(acp.Transport):
    """The server end of a listener: accepts one peer when opened."""

    def __init__(self, listener: acp.SocketListener) -> None:
        self._listener = listener

    @asynccontextmanager
    async def _open(self, backend: Any) -> AsyncIterator[Any]:
        transport = await self._listener.accept()
        async with transport._open(backend) as channel:
            yield channel


PAIRS = {
    "memory": lambda tmp_path: simple(memory_pair),
    "socketpair": lambda tmp_path: simple(socket_pair),
    "pipes": lambda tmp_path: simple(pipe_pair),
    "tcp": tcp_pair,
    "unix": unix_pair,
    "bytestreams-tcp": anyio_tcp_pair,
    "bytestreams-unix": anyio_unix_pair,
}


@pytest.mark.parametrize("kind", list(PAIRS))
async def test_ten_megabytes_each_way(kind: str, tmp_path: Path) -> None:
    async def main(peer: Peer) -> None:
        await peer.echo()
        await peer.big()
        await peer.echo("after")  # the connection is still in step

    async with PAIRS[kind](tmp_path) as (agent_end, client_end):
        await in_process(agent_end, client_end, main)


async def test_ten_megabytes_each_way_with_a_subprocess(anyio_backend: str) -> None:
    """Over a child's stdin/stdout pipes (acp.Subprocess / acp.stdio())."""
    agent = acp.Subprocess(peer_cmd(anyio_backend))

    async def main(peer: Peer) -> None:
        await peer.big()
        await peer.big()  # twice: the large read buffer is released and reused

    await as_client(agent, main)
    assert agent.returncode == 0
