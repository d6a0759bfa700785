"""A channel over file descriptors: pipes, sockets, ttys, regular files."""

from __future__ import annotations

import errno
import os
import select
import socket
import stat
from collections.abc import Callable, Iterable

import anyio

from .backend import Backend
from .channel import LARGE_READ_SIZE, READ_SIZE, Channel, ChannelError

__all__ = ("FdChannel", "pollable")

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
    if not pollable(fd, mode):
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


def pollable(fd: int, mode: int | None = None) -> bool:
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
