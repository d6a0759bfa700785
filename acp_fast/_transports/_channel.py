"""Channels: the byte pipes a connection reads and writes.

A connection does two things with its transport, many times per second:
take whatever bytes have arrived, and hand over bytes to send. A Channel
offers exactly that, shaped for the per-message path:

* ``receive()`` returns the next bytes that arrived (``b""`` at EOF). Reads
  go straight to the OS into a fixed-size buffer (64 KiB, more while a large
  line is arriving), never through an anyio stream per message.
* ``write(data)`` is synchronous and never blocks: it writes what the OS
  takes now and keeps the rest, which the channel's own ``run()`` task writes
  as the descriptor becomes writable. Order is always preserved.
* ``drain()`` waits until everything written has been handed to the OS;
  ``pending`` says how much is still held, so senders can be paced.
* ``close_write()`` drains, then ends the output (the peer sees EOF) while
  reading goes on; ``aclose()`` releases everything.

Failures of the underlying descriptor or stream surface as ``ChannelError``
from ``receive``/``write``/``drain``, which the connection turns into its
own failure (never a silent EOF).
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .._async._backend import Backend, Waiter

__all__ = (
    "Channel",
    "ChannelError",
    "FdChannel",
    "MemoryChannel",
    "StreamChannel",
    "memory_channel_pair",
)

READ_SIZE = 64 * 1024
LARGE_READ_SIZE = 1024 * 1024


class ChannelError(Exception):
    """The transport failed (not a clean EOF)."""


class Channel:
    """Base class: the buffering and draining shared by every channel."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._held: deque[bytes] = deque()  # written by us, not yet by the OS
        self._held_size = 0
        self._writer: Waiter | None = None  # the run() task, parked
        self._drainers: list[Waiter] = []
        self._failure: BaseException | None = None
        self._write_closed = False
        self._eof_requested = False
        # A hint from the reader: a line this long is being received.
        self.read_hint = 0

    # -- reading ------------------------------------------------------------

    async def receive(self) -> bytes:
        raise NotImplementedError

    # -- writing ------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Bytes written to the channel and not yet taken by the OS."""
        return self._held_size

    def write(self, data: bytes) -> None:
        if self._failure is not None:
            raise ChannelError(f"cannot write: {self._failure}") from self._failure
        if self._write_closed:
            raise ChannelError("cannot write: output already closed")
        if not self._held:
            try:
                written = self._write_now(data)
            except ChannelError as exc:
                self._fail(exc)
                raise
            if written == len(data):
                return
            data = data[written:]
        self._held.append(data)
        self._held_size += len(data)
        self._wake_writer()

    def _write_now(self, data: bytes) -> int:
        """Write as much as possible without blocking; return the count."""
        raise NotImplementedError

    async def _wait_writable(self) -> None:
        raise NotImplementedError

    def _wake_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.set()

    async def run(self) -> None:
        """Write held data as the transport accepts it (one task per channel).

        Returns once the output was ended (close_write) or failed.
        """
        while True:
            while not self._held:
                if self._write_closed or self._failure is not None:
                    return
                if self._eof_requested:
                    self._close_output()
                    return
                self._writer = self.backend.new_waiter()
                await self._writer.wait()
            while self._held:
                data = self._held[0]
                try:
                    written = self._write_now(data)
                except ChannelError as exc:
                    self._fail(exc)
                    return
                self._held_size -= written
                if written == len(data):
                    self._held.popleft()
                    continue
                self._held[0] = data[written:]
                await self._wait_writable()
            self._release_drainers()

    def _close_output(self) -> None:
        self._write_closed = True
        try:
            self._end_output()
        except OSError:
            pass
        self._release_drainers()

    async def drain(self) -> None:
        """Wait until everything written so far was handed to the OS."""
        while self._held and self._failure is None:
            waiter = self.backend.new_waiter()
            self._drainers.append(waiter)
            self._wake_writer()
            await waiter.wait()
        if self._failure is not None:
            raise ChannelError(f"write failed: {self._failure}") from self._failure

    async def close_write(self) -> None:
        """Drain, then end the output: the peer reads EOF; reading goes on."""
        if self._write_closed or self._eof_requested:
            return
        await self.drain()
        self._eof_requested = True
        if not self._held:
            self._close_output()
        self._wake_writer()

    def _end_output(self) -> None:
        raise NotImplementedError

    def _release_drainers(self) -> None:
        drainers, self._drainers = self._drainers, []
        for waiter in drainers:
            waiter.set()

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
        self._held.clear()
        self._held_size = 0
        self._release_drainers()

    async def aclose(self) -> None:
        raise NotImplementedError


# --- file descriptors: pipes, sockets, ttys, regular files --------------------


class FdChannel(Channel):
    """A channel over file descriptors (one for each direction, or one socket).

    Pipes, sockets and ttys are used in non-blocking mode with readiness
    waits; a regular file cannot be polled (epoll refuses it) but never
    blocks either, so it is read and written directly.
    """

    def __init__(
        self,
        backend: Backend,
        read_fd: int | None,
        write_fd: int | None,
        *,
        close_fds: bool = True,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(backend)
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._close_fds = close_fds
        self._on_close = on_close
        self._read_polls = read_fd is not None and _pollable(read_fd)
        self._write_polls = write_fd is not None and _pollable(write_fd)
        self._socket_read = read_fd is not None and _is_socket(read_fd)
        self._socket_write = write_fd is not None and _is_socket(write_fd)
        for fd, polls in ((read_fd, self._read_polls), (write_fd, self._write_polls)):
            if fd is not None and polls:
                os.set_blocking(fd, False)
        self._closed = False

    async def receive(self) -> bytes:
        fd = self._read_fd
        if fd is None:
            raise ChannelError("this channel has no input")
        size = LARGE_READ_SIZE if self.read_hint > READ_SIZE else READ_SIZE
        if not self._read_polls:
            await anyio.lowlevel.checkpoint()
            try:
                return os.read(fd, size)
            except OSError as exc:
                raise ChannelError(f"read failed: {exc}") from exc
        while True:
            try:
                return os.read(fd, size)
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno == errno.ECONNRESET:
                    return b""
                raise ChannelError(f"read failed: {exc}") from exc
            await self.backend.wait_readable(fd)

    def _write_now(self, data: bytes) -> int:
        fd = self._write_fd
        if fd is None:
            raise ChannelError("this channel has no output")
        if not self._write_polls:
            # A regular file: a blocking write that always completes.
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                raise ChannelError(f"write failed: {exc}") from exc
            return len(data)
        try:
            return os.write(fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise ChannelError(f"write failed: {exc}") from exc

    async def _wait_writable(self) -> None:
        assert self._write_fd is not None
        await self.backend.wait_writable(self._write_fd)

    def _end_output(self) -> None:
        fd = self._write_fd
        if fd is None:
            return
        if fd == self._read_fd:
            if self._socket_write:
                socket.socket(fileno=fd).detach()  # borrow: keep the fd open
                _shutdown_write(fd)
            return
        self._write_fd = None
        self.backend.forget_fd(fd)
        if self._close_fds:
            os.close(fd)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        fds = {fd for fd in (self._read_fd, self._write_fd) if fd is not None}
        self._read_fd = self._write_fd = None
        for fd in fds:
            self.backend.forget_fd(fd)
            if self._close_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self._on_close is not None:
            self._on_close()


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _is_socket(fd: int) -> bool:
    return stat.S_ISSOCK(os.fstat(fd).st_mode)


def _shutdown_write(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        sock.detach()


# --- anyio byte streams ------------------------------------------------------


class StreamChannel(Channel):
    """A channel over any anyio byte streams (TLS, custom transports, ...).

    This is the generic path: one anyio ``send`` per batch of writes, never
    one per message, and reads of whatever the stream yields.
    """

    def __init__(
        self,
        backend: Backend,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
    ) -> None:
        super().__init__(backend)
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._sending = False

    async def receive(self) -> bytes:
        try:
            return await self._receive_stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""
        except (anyio.BrokenResourceError, OSError) as exc:
            raise ChannelError(f"read failed: {exc!r}") from exc

    def _write_now(self, data: bytes) -> int:
        return 0  # everything goes through run()

    async def run(self) -> None:
        while True:
            while not self._held:
                if self._write_closed or self._failure is not None:
                    return
                if self._eof_requested:
                    self._write_closed = True
                    await self._send_eof()
                    self._release_drainers()
                    return
                self._writer = self.backend.new_waiter()
                await self._writer.wait()
            data = b"".join(self._held)
            size = self._held_size
            self._held.clear()
            try:
                await self._send_stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                self._fail(exc)
                return
            self._held_size -= size
            if not self._held:
                self._release_drainers()

    async def drain(self) -> None:
        # Held data is in flight until run() finished sending it.
        while (self._held or self._held_size) and self._failure is None:
            waiter = self.backend.new_waiter()
            self._drainers.append(waiter)
            self._wake_writer()
            await waiter.wait()
        if self._failure is not None:
            raise ChannelError(f"write failed: {self._failure}") from self._failure

    async def close_write(self) -> None:
        if self._write_closed or self._eof_requested:
            return
        await self.drain()
        self._eof_requested = True
        self._write_closed = True
        await self._send_eof()

    async def _send_eof(self) -> None:
        send_eof = getattr(self._send_stream, "send_eof", None)
        try:
            if send_eof is not None and cast(object, self._send_stream) is self._receive_stream:
                await send_eof()
            else:
                await self._send_stream.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    def _end_output(self) -> None:  # pragma: no cover - run() handles EOF itself
        pass

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            for stream in {id(s): s for s in (self._send_stream, self._receive_stream)}.values():
                try:
                    await stream.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass


# --- in memory ---------------------------------------------------------------


class _MemoryPipe:
    """One direction of an in-memory link, with a capacity like an OS pipe."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.closed = False  # the writer ended its output
        self.reader: Any = None  # Waiter of the parked reader
        self.writer: Any = None  # Waiter of the parked writer (pipe full)

    def wake_reader(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None:
            reader.set()

    def wake_writer(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.set()


class MemoryChannel(Channel):
    """One end of an in-memory link: bytes, framing and all, no system calls."""

    def __init__(self, backend: Backend, inbound: _MemoryPipe, outbound: _MemoryPipe) -> None:
        super().__init__(backend)
        self._inbound = inbound
        self._outbound = outbound

    async def receive(self) -> bytes:
        pipe = self._inbound
        while not pipe.chunks:
            if pipe.closed:
                return b""
            pipe.reader = self.backend.new_waiter()
            await pipe.reader.wait()
        data = pipe.chunks[0] if len(pipe.chunks) == 1 else b"".join(pipe.chunks)
        pipe.chunks.clear()
        pipe.size = 0
        pipe.wake_writer()
        return data

    def _write_now(self, data: bytes) -> int:
        pipe = self._outbound
        if pipe.closed:
            raise ChannelError("write failed: the other end closed its input")
        room = pipe.capacity - pipe.size
        if room <= 0:
            return 0
        if len(data) > room:
            data = data[:room]
        pipe.chunks.append(data)
        pipe.size += len(data)
        pipe.wake_reader()
        return len(data)

    async def _wait_writable(self) -> None:
        pipe = self._outbound
        while pipe.size >= pipe.capacity and not pipe.closed:
            pipe.writer = self.backend.new_waiter()
            await pipe.writer.wait()

    def _end_output(self) -> None:
        self._outbound.closed = True
        self._outbound.wake_reader()

    async def aclose(self) -> None:
        self._end_output()
        # Nobody will read our input any more: unblock a writer on the far end.
        self._inbound.closed = True
        self._inbound.chunks.clear()
        self._inbound.size = 0
        self._inbound.wake_writer()


def memory_channel_pair(
    backend: Backend, capacity: int = 256 * 1024
) -> tuple[MemoryChannel, MemoryChannel]:
    """Two connected in-memory channel ends."""
    left_to_right, right_to_left = _MemoryPipe(capacity), _MemoryPipe(capacity)
    return (
        MemoryChannel(backend, right_to_left, left_to_right),
        MemoryChannel(backend, left_to_right, right_to_left),
    )
