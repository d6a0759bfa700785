"""TCP and Unix-domain sockets: ``acp.tcp``/``acp.unix`` to connect,
``acp.listen_tcp``/``acp.listen_unix`` to accept, ``acp.SocketTransport``."""

from __future__ import annotations

import logging
import socket
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.transports.peer import agent_builder
from tests.transports.scenarios import TIMEOUT, Peer, as_client

pytestmark = pytest.mark.anyio


async def serve_while(listener: acp.SocketListener, clients: Any) -> None:
    """Serve the peer agent on ``listener`` while ``clients()`` runs."""
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, agent_builder())
            await clients()
            await listener.aclose()  # serve() returns once its connections ended


async def echo_client(transport: acp.Transport, value: Any = "ping") -> None:
    async def main(peer: Peer) -> None:
        await peer.echo(value)

    await as_client(transport, main)


async def test_tcp() -> None:
    async with await acp.listen_tcp("127.0.0.1", 0) as listener:
        assert listener.address == ("127.0.0.1", listener.port)

        async def clients() -> None:
            async with anyio.create_task_group() as group:
                for i in range(5):  # concurrent connections, one task each
                    group.start_soon(echo_client, acp.tcp("127.0.0.1", listener.port), i)

        await serve_while(listener, clients)


async def test_tcp_by_name() -> None:
    async with await acp.listen_tcp("localhost", 0) as listener:

        async def clients() -> None:
            await echo_client(acp.tcp("localhost", listener.port))

        await serve_while(listener, clients)


async def test_unix(tmp_path: Path) -> None:
    path = tmp_path / "agent.sock"
    async with await acp.listen_unix(path) as listener:
        assert listener.address == str(path)

        async def clients() -> None:
            await echo_client(acp.unix(path))
            await echo_client(acp.unix(str(path)), "again")

        await serve_while(listener, clients)
    assert not path.exists()  # removed with the listener


async def test_unix_abstract_namespace() -> None:
    name = f"\0acp-fast-test-{uuid.uuid4()}"
    async with await acp.listen_unix(name) as listener:

        async def clients() -> None:
            await echo_client(acp.unix(name))

        await serve_while(listener, clients)


async def test_listen_unix_refuses_an_existing_path(tmp_path: Path) -> None:
    path = tmp_path / "taken"
    path.write_text("not a socket")
    with pytest.raises(OSError):
        await acp.listen_unix(path)
    assert path.read_text() == "not a socket"


async def test_connection_refused() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectionRefusedError):
        await echo_client(acp.tcp("127.0.0.1", port))


async def test_unix_path_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await echo_client(acp.unix(tmp_path / "nobody.sock"))


async def test_accepted_sockets_disable_nagle() -> None:
    async with await acp.listen_tcp() as listener:
        with socket.create_connection(("127.0.0.1", listener.port)):
            with anyio.fail_after(TIMEOUT):
                accepted = await listener.accept()
            sock = accepted._sock
            assert sock is not None
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            accepted.close()


async def test_accept_after_close_and_close_during_accept() -> None:
    listener = await acp.listen_tcp()
    async with anyio.create_task_group() as group:

        async def accept() -> None:
            with pytest.raises(anyio.ClosedResourceError):
                await listener.accept()

        group.start_soon(accept)
        await anyio.wait_all_tasks_blocked()
        await listener.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await listener.accept()
    await listener.aclose()  # idempotent


async def test_serve_with_a_function_and_a_failing_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One connection failing is logged and ends that connection only."""
    served: list[Any] = []

    async def handler(transport: acp.Transport) -> None:
        served.append(transport)
        if len(served) == 1:
            raise RuntimeError("first connection fails")
        await agent_builder().connect_to(transport)

    async with await acp.listen_tcp() as listener:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(listener.serve, handler)
                # The first peer's socket is closed by the server at once.
                async with await anyio.connect_tcp("127.0.0.1", listener.port) as first:
                    with pytest.raises(anyio.EndOfStream):
                        await first.receive()
                await echo_client(acp.tcp("127.0.0.1", listener.port))
                await listener.aclose()
    assert len(served) == 2
    assert "first connection fails" in caplog.text
    assert any(record.levelno == logging.ERROR for record in caplog.records)


async def test_serve_into_a_task_group() -> None:
    async with await acp.listen_tcp() as listener, anyio.create_task_group() as connections:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: listener.serve(agent_builder(), task_group=connections))
                await echo_client(acp.tcp("127.0.0.1", listener.port))
                await listener.aclose()


async def test_socket_transport_over_a_socket_of_your_own() -> None:
    left, right = socket.socketpair()
    async with anyio.create_task_group() as group:
        group.start_soon(agent_builder().connect_to, acp.SocketTransport(left))
        await echo_client(acp.SocketTransport(right))
    one, other = socket.socketpair()
    with other:
        transport = acp.SocketTransport(one)
        transport.close()
        assert one.fileno() == -1
    with pytest.raises(RuntimeError, match="opened already"):
        await echo_client(transport)
    with socket.socket(type=socket.SOCK_DGRAM) as datagrams, pytest.raises(ValueError):
        acp.SocketTransport(datagrams)


def test_repr() -> None:
    assert repr(acp.tcp("h", 1)) == "tcp('h', 1)"
    assert repr(acp.unix(Path("/p"))) == "unix('/p')"
