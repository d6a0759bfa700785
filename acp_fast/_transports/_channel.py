"""Channels: the byte pipes a connection reads and writes.

A connection does two things with its transport, many times per second:
take whatever bytes have arrived, and hand over bytes to send. A Channel
offers exactly that, shaped for the per-message path:

* ``receive()`` returns the next bytes that arrived (``b""`` at EOF). Reads
  go straight to the OS, never through an anyio stream per message: 64 KiB
  at a time, or, while a large line is arriving, up to 1 MiB into a buffer
  that is reused (never a fresh large buffer per read, see FdChannel).
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
import select
import socket
import stat
from collections import deque
from collections.abc import Callable, Iterable
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
        # Written by us, not yet by the OS. A partly written message is kept
        # as a memoryview of its rest: slicing bytes would copy the remainder
        # on every partial write, quadratic for a 10 MB message on a pipe.
        self._held: deque[bytes | memoryview] = deque()
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
            rest = memoryview(data)[written:]
            self._held.append(rest)
            self._held_size += len(rest)
        else:
            self._held.append(data)
            self._held_size += len(data)
        self._wake_writer()

    def _write_now(self, data: bytes | memoryview) -> int:
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
                self._held[0] = memoryview(data)[written:]
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
        while self._writing() and self._failure is None:
            waiter = self.backend.new_waiter()
            self._drainers.append(waiter)
            self._wake_writer()
            await waiter.wait()
        if self._failure is not None:
            raise ChannelError(f"write failed: {self._failure}") from self._failure

    def _writing(self) -> bool:
        """Whether written data is still on its way to the OS."""
        return bool(self._held)

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

# How FdChannel drives one descriptor.
_DIRECT = 0  # regular files, devices epoll refuses (/dev/null): plain calls, never wait
_NONBLOCKING = 1  # O_NONBLOCK is set on its description: os.read/os.write + readiness
_SOCKET = 2  # a socket whose description is shared: recv/send with MSG_DONTWAIT


class FdChannel(Channel):
    """A channel over file descriptors (one for each direction, or one socket).

    ``close_fds`` says which descriptors the channel owns and closes at the
    end: all (True), none (False) or the given ones. How each descriptor is
    driven depends on what it is:

    * pipes, FIFOs, ttys and owned sockets are switched to non-blocking mode
      and driven with readiness waits. The caller decides whether that flag
      may be changed (``FdTransport`` reopens or restores shared ones);
    * a socket the channel does not own is driven with ``MSG_DONTWAIT`` on a
      duplicate of it, so its (shared) blocking flag is never touched;
    * a regular file, and a device epoll refuses (``/dev/null``), cannot be
      polled but never blocks either: it is read and written directly.

    Reads take 64 KiB with ``os.read``, which for that size costs no more than
    a reused buffer. While a large line is arriving (``read_hint``) they go
    into a reused 1 MiB buffer instead: a fresh buffer that large per read is
    what costs asyncio's own transports an mmap/mremap/munmap each (the
    "256 KiB read trap" in the performance notes).
    """

    def __init__(
        self,
        backend: Backend,
        read_fd: int | None,
        write_fd: int | None,
        *,
        close_fds: bool | Iterable[int] = True,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(backend)
        fds = {fd for fd in (read_fd, write_fd) if fd is not None}
        if close_fds is True:
            owned = set(fds)
        elif close_fds is False:
            owned = set()
        else:
            owned = set(close_fds) & fds
        self._on_close = on_close
        self._closed = False
        # Per distinct descriptor: (fd used, mode, socket object or None).
        # Descriptors we open here (duplicates of shared sockets) join `owned`.
        ends: dict[int, tuple[int, int, socket.socket | None]] = {}
        try:
            for fd in fds:
                ends[fd] = _prepare(fd, fd in owned, owned)
        except BaseException:
            for fd in owned - fds:
                os.close(fd)
            raise
        self._owned = owned
        none: tuple[int | None, int, socket.socket | None] = (None, _DIRECT, None)
        self._read_fd, self._read_mode, self._read_sock = (
            ends[read_fd] if read_fd is not None else none
        )
        self._write_fd, self._write_mode, self._write_sock = (
            ends[write_fd] if write_fd is not None else none
        )
        # A pty master reads EIO once the other side is gone: that is its EOF.
        self._read_eio_is_eof = read_fd is not None and os.isatty(read_fd)
        self._large_buffer: bytearray | None = None
        self._drained = False  # the last read was short (see receive)

    # -- reading ------------------------------------------------------------

    async def receive(self) -> bytes:
        fd = self._read_fd
        if fd is None:
            raise ChannelError("this channel has no input")
        mode = self._read_mode
        if mode == _DIRECT:
            await anyio.lowlevel.checkpoint()
        while True:
            if self._drained:
                # The last read emptied the descriptor: wait before reading
                # again rather than make a read that fails with EAGAIN (one
                # wasted system call per wake-up; two per round trip at C=1).
                self._drained = False
                await self.backend.wait_readable(fd)
            try:
                if self.read_hint > READ_SIZE:
                    return self._read_large(fd)
                self._large_buffer = None  # the large line is done: free its buffer
                if mode == _SOCKET:
                    assert self._read_sock is not None
                    data = self._read_sock.recv(READ_SIZE, socket.MSG_DONTWAIT)
                else:
                    data = os.read(fd, READ_SIZE)
                self._drained = len(data) < READ_SIZE and mode != _DIRECT
                return data
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno == errno.ECONNRESET or (
                    exc.errno == errno.EIO and self._read_eio_is_eof
                ):
                    return b""
                raise ChannelError(f"read failed: {exc}") from exc
            if mode == _DIRECT:  # pragma: no cover - files never say "try again"
                raise ChannelError("read failed: a non-pollable descriptor would block")
            await self.backend.wait_readable(fd)

    def _read_large(self, fd: int) -> bytes:
        buffer = self._large_buffer
        if buffer is None:
            buffer = self._large_buffer = bytearray(LARGE_READ_SIZE)
        if self._read_mode == _SOCKET:
            assert self._read_sock is not None
            count = self._read_sock.recv_into(buffer, LARGE_READ_SIZE, socket.MSG_DONTWAIT)
        else:
            count = os.readv(fd, (buffer,))
        return bytes(memoryview(buffer)[:count])

    # -- writing ------------------------------------------------------------

    def _write_now(self, data: bytes | memoryview) -> int:
        fd = self._write_fd
        if fd is None:
            raise ChannelError("this channel has no output")
        try:
            if self._write_mode == _NONBLOCKING:
                return os.write(fd, data)
            if self._write_mode == _SOCKET:
                assert self._write_sock is not None
                return self._write_sock.send(data, socket.MSG_DONTWAIT)
            # A regular file: a blocking write that always completes.
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            return len(data)
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
        if self._write_sock is not None:
            # A socket (maybe our read side too, maybe shared): a half-close
            # is how its peer sees EOF while we keep reading.
            try:
                self._write_sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if fd == self._read_fd:
            return  # the descriptor stays open for reading
        self._write_fd = None
        self.backend.forget_fd(fd)
        if fd in self._owned:
            self._owned.discard(fd)
            _close_end(fd, self._write_sock)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        ends = {
            fd: sock
            for fd, sock in ((self._read_fd, self._read_sock), (self._write_fd, self._write_sock))
            if fd is not None
        }
        self._read_fd = self._write_fd = None
        self._large_buffer = None
        for fd, sock in ends.items():
            self.backend.forget_fd(fd)
            if fd in self._owned:
                _close_end(fd, sock)
            elif sock is not None:
                sock.detach()  # borrowed: the descriptor stays open
        self._owned.clear()
        if self._on_close is not None:
            self._on_close()


def _prepare(fd: int, owned: bool, opened: set[int]) -> tuple[int, int, socket.socket | None]:
    """Decide how to drive ``fd``: returns (fd to use, mode, socket object)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISSOCK(mode):
        if owned:
            os.set_blocking(fd, False)
            return fd, _NONBLOCKING, socket.socket(fileno=fd)
        # Shared (stdin/stdout as an inetd-style socket, say): O_NONBLOCK
        # would change it for every process holding it, MSG_DONTWAIT only
        # changes our calls. A duplicate gives us a socket object to own.
        dup = os.dup(fd)
        opened.add(dup)
        return dup, _SOCKET, _borrowed_socket(dup)
    if not _pollable(fd, mode):
        return fd, _DIRECT, None
    os.set_blocking(fd, False)
    return fd, _NONBLOCKING, None


def _borrowed_socket(fd: int) -> socket.socket:
    """A socket object for ``fd`` that leaves its blocking flag as it was."""
    was_blocking = os.get_blocking(fd)
    sock = socket.socket(fileno=fd)
    if sock.gettimeout() is not None:
        # socket.setdefaulttimeout() is in force: such an object polls before
        # each call (blocking the event loop) and switched the flag.
        sock.settimeout(None)
    if os.get_blocking(fd) != was_blocking:
        os.set_blocking(fd, was_blocking)
    return sock


def _close_end(fd: int, sock: socket.socket | None) -> None:
    try:
        if sock is not None:
            sock.close()
        else:
            os.close(fd)
    except OSError:
        pass


def _pollable(fd: int, mode: int | None = None) -> bool:
    """Can readiness be waited for on ``fd`` (is it not a file, in effect)?"""
    if mode is None:
        mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISBLK(mode):
        return False
    if not stat.S_ISCHR(mode):
        return True  # pipes, FIFOs, sockets
    # Character devices differ: ttys poll, /dev/null and friends make epoll
    # fail with EPERM (both event loops use epoll on Linux). Ask it.
    epoll = getattr(select, "epoll", None)
    if epoll is None:  # pragma: no cover - not Linux
        return True
    with epoll() as probe:
        try:
            probe.register(fd, 0)
        except PermissionError:
            return False
    return True


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

    async def receive(self) -> bytes:
        try:
            if self.read_hint > READ_SIZE:
                # A large line is arriving: take it in larger pieces.
                return await self._receive_stream.receive(LARGE_READ_SIZE)
            return await self._receive_stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return b""
        except Exception as exc:
            # Any other failure of the stream (BrokenResourceError, OSError,
            # IncompleteRead, a custom stream's own exception) is a read error:
            # the connection fails with it as an acp.Error, never as a clean
            # EOF and never as a raw exception escaping its task group
            # (rust-sdk-semantics §2.7, §7.7).
            raise ChannelError(f"read failed: {exc!r}") from exc

    def _write_now(self, data: bytes | memoryview) -> int:
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
            except Exception as exc:
                # As for reads: whatever the stream raises is a write failure
                # of the transport (§2.7), reported through _failure, not an
                # exception escaping the connection's task group.
                self._fail(exc)
                return
            self._held_size -= size
            if not self._held:
                self._release_drainers()

    def _writing(self) -> bool:
        # Held data is in flight until run() finished sending it.
        return bool(self._held or self._held_size)

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

    def _write_now(self, data: bytes | memoryview) -> int:
        pipe = self._outbound
        if pipe.closed:
            raise ChannelError("write failed: the other end closed its input")
        room = pipe.capacity - pipe.size
        if room <= 0:
            return 0
        if len(data) > room:
            data = data[:room]
        # The reader gets bytes; a held rest (a memoryview) is copied once here.
        pipe.chunks.append(data if type(data) is bytes else bytes(data))
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
