"""``acp.FdTransport`` on descriptors of every kind, in one process.

Borrowed descriptors (``close=False``, what ``acp.stdio()`` uses) are shared
with others, so their blocking mode must not change: pipes and ttys are
reopened through /proc (a description of our own), sockets are driven with
MSG_DONTWAIT, files need nothing. Only when reopening is impossible is the
flag switched, and then switched back.
"""

from __future__ import annotations

import os
import pty
import socket
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

import acp_fast as acp
import acp_fast._io.fd as fd_module
import acp_fast._transports.base as base_module
from acp_fast.testing import pipe_pair, socket_pair
from tests.transports.peer import agent_builder
from tests.transports.scenarios import Peer, in_process

pytestmark = pytest.mark.anyio


@pytest.fixture
def pipes() -> Iterator[tuple[int, int, int, int]]:
    """Two pipes: (our read end, our write end, their read end, their write end).

    Ours are borrowed by the connection under test and closed here; theirs
    are handed over to (and closed by) the other end's transport.
    """
    our_read, their_write = os.pipe()
    their_read, our_write = os.pipe()
    yield our_read, our_write, their_read, their_write
    os.close(our_read)
    os.close(our_write)


async def test_borrowed_pipes_keep_their_blocking_mode(pipes: tuple[int, int, int, int]) -> None:
    our_read, our_write, their_read, their_write = pipes
    theirs = acp.FdTransport(their_read, their_write, close=True)

    async def main(peer: Peer) -> None:
        await peer.echo("x" * 300_000)  # several partial writes and reads each way
        # Served through descriptions of its own: the shared ones are untouched.
        assert os.get_blocking(our_read) and os.get_blocking(our_write)

    # The agent borrows our ends; the client closing its own ends is its EOF.
    await in_process(acp.FdTransport(our_read, our_write), theirs, main)
    # Still open and blocking.
    assert os.get_blocking(our_read) and os.get_blocking(our_write)
    os.fstat(our_read)
    os.fstat(our_write)


async def test_fallback_switches_the_flag_and_restores_it(
    pipes: tuple[int, int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without /proc (or off Linux) the borrowed pipe is made non-blocking for
    the connection's lifetime only."""
    monkeypatch.setattr(base_module, "_reopen", lambda fd, flags: None)
    our_read, our_write, their_read, their_write = pipes
    theirs = acp.FdTransport(their_read, their_write, close=True)

    async def main(peer: Peer) -> None:
        await peer.echo()
        assert not os.get_blocking(our_read) and not os.get_blocking(our_write)

    await in_process(acp.FdTransport(our_read, our_write), theirs, main)
    assert os.get_blocking(our_read) and os.get_blocking(our_write)


async def test_borrowed_socket_keeps_its_blocking_mode() -> None:
    ours, theirs = socket.socketpair()
    with ours:
        fd = ours.fileno()

        async def main(peer: Peer) -> None:
            await peer.echo("x" * 300_000)  # several partial sends and reads
            assert ours.getblocking()

        await in_process(acp.FdTransport(fd, fd), acp.SocketTransport(theirs), main)
        assert ours.getblocking()
        assert ours.fileno() == fd  # still open


async def test_borrowed_tty_keeps_its_blocking_mode() -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)
    try:

        async def main(peer: Peer) -> None:
            await peer.echo()
            assert os.get_blocking(slave)

        # Closing the master at the end is the slave's EOF.
        await in_process(
            acp.FdTransport(slave, slave), acp.FdTransport(master, master, close=True), main
        )
        assert os.get_blocking(slave)
    finally:
        os.close(slave)


async def test_regular_files(tmp_path: Path) -> None:
    """A file cannot be polled but never blocks: read to EOF, answers appended."""
    requests = tmp_path / "in.ndjson"
    lines = [
        orjson.dumps({"jsonrpc": "2.0", "id": i, "method": "_t/echo", "params": {"i": i}})
        for i in range(3)
    ]
    requests.write_bytes(b"\n".join(lines) + b"\n")
    read_fd = os.open(requests, os.O_RDONLY)
    write_fd = os.open(tmp_path / "out.ndjson", os.O_WRONLY | os.O_CREAT)
    try:
        with anyio.fail_after(5):
            await agent_builder().connect_to(acp.FdTransport(read_fd, write_fd))
    finally:
        os.close(read_fd)
        os.close(write_fd)
    answers = [orjson.loads(line) for line in (tmp_path / "out.ndjson").read_bytes().splitlines()]
    assert answers == [{"jsonrpc": "2.0", "id": i, "result": {"i": i}} for i in range(3)]


async def test_dev_null() -> None:
    """/dev/null: epoll refuses it (EPERM), so it is read directly: EOF at once."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        assert not fd_module.pollable(null)
        with anyio.fail_after(5):
            await agent_builder().connect_to(acp.FdTransport(null, null))
    finally:
        os.close(null)


async def test_reads_never_take_a_fresh_large_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The asyncio "256 KiB read trap": a fresh large bytes object per read
    costs an mmap/mremap/munmap each. Small reads take 64 KiB (served from the
    heap); a large line is read into one reused buffer."""
    read_sizes: list[int] = []
    readv_buffers: list[int] = []
    real_read, real_readv = os.read, os.readv

    def read(fd: int, size: int) -> bytes:
        read_sizes.append(size)
        return real_read(fd, size)

    def readv(fd: int, buffers: Any) -> int:
        readv_buffers.extend(id(buffer) for buffer in buffers)
        return real_readv(fd, buffers)

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "readv", readv)

    async def main(peer: Peer) -> None:
        for i in range(50):
            await peer.echo(i)
        await peer.big()

    for make in (pipe_pair, socket_pair):
        read_sizes.clear()
        readv_buffers.clear()
        await in_process(*make(), main)
        assert read_sizes and max(read_sizes) <= 64 * 1024
        # Two channels read a 10 MB line each: one buffer each, many reads.
        assert len(readv_buffers) >= 10
        assert len(set(readv_buffers)) <= 2


async def test_partial_writes_do_not_copy_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the OS did not take yet is held as a view, never re-sliced bytes
    (quadratic for a 10 MB message over a 64 KiB pipe)."""
    held_types: set[type] = set()
    real_write_now = fd_module.FdChannel._write_now

    def write_now(self: Any, data: Any) -> int:
        held_types.add(type(data))
        return real_write_now(self, data)

    monkeypatch.setattr(fd_module.FdChannel, "_write_now", write_now)

    async def main(peer: Peer) -> None:
        await peer.big()

    await in_process(*pipe_pair(), main)
    assert memoryview in held_types
