"""The Transport interface and the transports over descriptors and streams."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from anyio.abc import ByteReceiveStream, ByteSendStream

from .._async._backend import Backend
from ._channel import Channel, FdChannel, StreamChannel

__all__ = ("ByteStreams", "FdTransport", "Transport", "stdio")


class Transport:
    """Something a connection can run over.

    Subclasses implement ``_open(backend)``: an async context manager that
    yields a Channel while the connection runs and releases it afterwards.
    """

    def _open(self, backend: Backend) -> AbstractAsyncContextManager[Channel]:
        raise NotImplementedError


class ByteStreams(Transport):
    """Any anyio byte streams: ``ByteStreams(receive_stream, send_stream)``.

    Pass one bidirectional stream twice (a TCP ``SocketStream``, say). The
    streams are closed when the connection ends.
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

    With ``close=True`` the descriptors are closed when the connection ends;
    otherwise their blocking mode is restored and they stay open.
    """

    def __init__(self, read_fd: int | None, write_fd: int | None, *, close: bool = False) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.close = close

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        fds = {fd for fd in (self.read_fd, self.write_fd) if fd is not None}
        blocking = {fd: os.get_blocking(fd) for fd in fds}
        channel = FdChannel(backend, self.read_fd, self.write_fd, close_fds=self.close)
        try:
            yield channel
        finally:
            await channel.aclose()
            if not self.close:
                for fd, was_blocking in blocking.items():
                    try:
                        os.set_blocking(fd, was_blocking)
                    except OSError:
                        pass


def stdio() -> Transport:
    """This process's stdin and stdout (an agent launched by a client)."""
    return FdTransport(0, 1, close=False)
