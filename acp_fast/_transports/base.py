"""The transports over descriptors and streams."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio.abc import ByteReceiveStream, ByteSendStream

from .._io.backend import Backend
from .._io.channel import Channel
from .._io.fd import FdChannel, pollable
from .._io.stream import StreamChannel
from .._io.transport import Transport

__all__ = ("ByteStreams", "FdTransport", "Transport", "stdio")


class ByteStreams(Transport):
    """Any anyio byte streams: ``ByteStreams(receive_stream, send_stream)``.

    Pass one bidirectional stream twice (a TLS stream, say). The streams are
    closed when the connection ends. This is the generic path: writes are
    batched into one ``send``, but reads go through the stream's own
    machinery (on asyncio, anyio's socket streams read into a fresh 256 KiB
    buffer each time). For plain TCP and Unix sockets ``acp.tcp`` and
    ``acp.unix`` are faster.
    """

    def __init__(self, receive_stream: ByteReceiveStream, send_stream: ByteSendStream) -> None:
        self.receive_stream = receive_stream
        self.send_stream = send_stream

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        channel = StreamChannel(backend, self.receive_stream, self.send_stream)
        try:
            yield channel
        finally:
            await channel.aclose()


class FdTransport(Transport):
    """Raw file descriptors: one to read, one to write (or one socket twice).

    Any kind of file works: pipes, FIFOs, sockets, ttys, regular files,
    ``/dev/null``.

    With ``close=True`` the descriptors belong to the connection: it may
    switch them to non-blocking mode and closes them when it ends.

    With ``close=False`` (the default) they are borrowed, and probably shared
    with other processes (an agent's stdin and stdout). O_NONBLOCK belongs to
    the *open file description*, which every process holding it shares, so
    setting it could break the parent shell or a sibling. Instead:

    * a pipe, FIFO or tty is reopened through ``/proc/self/fd/N`` (Linux),
      which gives this process a description of its own to make non-blocking;
    * a socket is driven with ``MSG_DONTWAIT`` on each call, flag untouched;
    * a regular file or ``/dev/null`` never blocks and is used as it is;
    * when reopening is impossible (no ``/proc``, another OS, a FIFO without
      a reader), the descriptor is switched to non-blocking mode for the
      connection's lifetime and switched back afterwards.

    Borrowed descriptors stay open.
    """

    def __init__(self, read_fd: int | None, write_fd: int | None, *, close: bool = False) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.close = close

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        if self.close:
            channel = FdChannel(backend, self.read_fd, self.write_fd, close_fds=True)
            try:
                yield channel
            finally:
                await channel.aclose()
            return
        read_fd, write_fd = self.read_fd, self.write_fd
        reopened: dict[int, int] = {}  # borrowed fd -> our own description of it
        restore: dict[int, bool] = {}  # borrowed fd -> its blocking flag before us
        try:
            for fd in {fd for fd in (read_fd, write_fd) if fd is not None}:
                if not _needs_nonblocking(fd):
                    continue
                flags = os.O_RDWR if read_fd == write_fd else os.O_RDONLY
                if fd != read_fd:
                    flags = os.O_WRONLY
                own = _reopen(fd, flags)
                if own is not None:
                    reopened[fd] = own
                else:
                    restore[fd] = os.get_blocking(fd)
            if read_fd is not None:
                read_fd = reopened.get(read_fd, read_fd)
            if write_fd is not None:
                write_fd = reopened.get(write_fd, write_fd)
            channel = FdChannel(backend, read_fd, write_fd, close_fds=reopened.values())
        except BaseException:
            for own in reopened.values():
                os.close(own)
            raise
        try:
            yield channel
        finally:
            await channel.aclose()
            for fd, was_blocking in restore.items():
                try:
                    os.set_blocking(fd, was_blocking)
                except OSError:
                    pass

    def __repr__(self) -> str:
        return f"FdTransport({self.read_fd!r}, {self.write_fd!r}, close={self.close!r})"


def _needs_nonblocking(fd: int) -> bool:
    """A blocking descriptor the channel would switch to non-blocking mode."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISSOCK(mode) or not pollable(fd, mode):
        return False  # MSG_DONTWAIT, or used as it is
    return os.get_blocking(fd)


def _reopen(fd: int, flags: int) -> int | None:
    """A new, non-blocking open file description of ``fd``'s pipe or tty."""
    if not sys.platform.startswith("linux"):
        # Elsewhere /dev/fd/N duplicates the descriptor: the same description.
        return None
    try:
        own = os.open(
            f"/proc/self/fd/{fd}",
            flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
        )
    except OSError:
        return None  # no /proc, a FIFO without a reader, no permission...
    if not os.get_blocking(fd):
        # The open shared the description after all: undo, and fall back.
        os.set_blocking(fd, True)
        os.close(own)
        return None
    return own


class _Stdio(Transport):
    def __init__(self, protect_stdout: bool) -> None:
        self.protect_stdout = protect_stdout

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        if not self.protect_stdout:
            async with FdTransport(0, 1)._open(backend) as channel:
                yield channel
            return
        # The protocol gets a private duplicate of fd 1, and fd 1 itself (what
        # print(), logging to sys.stdout, C code and child processes write to)
        # points at stderr while the connection runs.
        _flush_stdout()  # what was printed before belongs where it was going
        protocol_fd = os.dup(1)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
        try:
            async with FdTransport(0, protocol_fd)._open(backend) as channel:
                yield channel
        finally:
            _flush_stdout()  # stray output so far goes to stderr
            os.dup2(protocol_fd, 1)
            os.close(protocol_fd)

    def __repr__(self) -> str:
        return f"stdio(protect_stdout={self.protect_stdout!r})"


def _flush_stdout() -> None:
    stream = sys.stdout
    if stream is not None:
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def stdio(*, protect_stdout: bool = False) -> Transport:
    """This process's stdin and stdout (an agent launched by a client).

    They may be pipes, sockets, ttys or regular files; see ``FdTransport``
    for how shared descriptors are left as they were (in short: never made
    non-blocking for the other processes holding them).

    ``protect_stdout=True`` keeps stray output off the protocol stream: while
    the connection runs, fd 1 is pointed at stderr, so ``print()``, C
    libraries and child processes that write to stdout cannot corrupt the
    protocol, which goes through a private duplicate of the original stdout.
    fd 1 is restored when the connection ends. It changes process-wide
    state, hence not the default.
    """
    return _Stdio(protect_stdout)
