"""TCP and Unix-domain sockets: connect to a peer, or listen for peers.

The sockets are this module's own, driven by the connection's file-descriptor
channel (non-blocking reads and writes with readiness waits), not by anyio
streams, so a message costs no stream call on either side::

    await builder.connect_to(acp.tcp("127.0.0.1", 8765))     # a client

    async with await acp.listen_tcp("127.0.0.1", 8765) as listener:
        await listener.serve(agent_builder)                  # an agent server

TCP sockets get ``TCP_NODELAY``: ACP is request/response traffic of small
messages, which Nagle's algorithm would hold back waiting for an ACK.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import anyio

from .._io.backend import Backend, current_backend
from .._io.channel import Channel
from .._io.fd import FdChannel
from .base import Transport

__all__ = ("SocketListener", "SocketTransport", "listen_tcp", "listen_unix", "tcp", "unix")

log = logging.getLogger("acp_fast.transports")

DEFAULT_BACKLOG = 128


class SocketTransport(Transport):
    """A connected stream socket; the connection takes it over and closes it.

    ``SocketListener.accept()`` returns these; wrap a socket of your own the
    same way. It can be opened once.
    """

    def __init__(self, sock: socket.socket) -> None:
        if sock.type != socket.SOCK_STREAM:
            raise ValueError("SocketTransport needs a stream socket")
        self._sock: socket.socket | None = sock
        self.peer_address: Any = _peer_name(sock)

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        sock, self._sock = self._sock, None
        if sock is None:
            raise RuntimeError("this socket transport was opened already")
        fd = sock.detach()
        channel = FdChannel(backend, fd, fd, close_fds=True)
        try:
            yield channel
        finally:
            await channel.aclose()

    def close(self) -> None:
        """Close the socket if it was never opened (a refused connection)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __repr__(self) -> str:
        return f"SocketTransport(peer={self.peer_address!r})"


class _ConnectingSocket(Transport):
    """Connects when opened: once per connection that uses it."""

    def __init__(self, describe: str) -> None:
        self._describe = describe

    async def _addresses(self) -> list[tuple[int, Any]]:
        raise NotImplementedError

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        sock = await self._connect(backend)
        fd = sock.detach()
        channel = FdChannel(backend, fd, fd, close_fds=True)
        try:
            yield channel
        finally:
            await channel.aclose()

    async def _connect(self, backend: Backend) -> socket.socket:
        error: OSError | None = None
        for family, address in await self._addresses():
            try:
                return await _connect_one(backend, family, address)
            except OSError as exc:
                error = exc
        assert error is not None
        raise error

    def __repr__(self) -> str:
        return self._describe


def tcp(host: str, port: int) -> Transport:
    """Connect to ``host:port`` over TCP when the connection opens.

    Each address ``host`` resolves to is tried in turn; the last error is
    raised (an ``OSError`` such as ``ConnectionRefusedError``) if none works.
    Bound the wait with ``anyio.fail_after`` around the connection.
    """

    class _Tcp(_ConnectingSocket):
        async def _addresses(self) -> list[tuple[int, Any]]:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            return [(family, address) for family, _, _, _, address in infos]

    return _Tcp(f"tcp({host!r}, {port!r})")


def unix(path: str | os.PathLike[str]) -> Transport:
    """Connect to the Unix-domain socket at ``path`` when the connection opens.

    A path starting with a NUL character names a socket in Linux's abstract
    namespace.
    """
    address = os.fspath(path)

    class _Unix(_ConnectingSocket):
        async def _addresses(self) -> list[tuple[int, Any]]:
            return [(socket.AF_UNIX, address)]

    return _Unix(f"unix({address!r})")


async def _connect_one(backend: Backend, family: int, address: Any) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    fd = sock.fileno()
    try:
        sock.setblocking(False)
        if family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        if code in (errno.EINPROGRESS, errno.EWOULDBLOCK):
            await backend.wait_writable(fd)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, f"connecting to {address!r} failed: {os.strerror(code)}")
    except BaseException:
        backend.forget_fd(fd)
        sock.close()
        raise
    return sock


def _peer_name(sock: socket.socket) -> Any:
    try:
        return sock.getpeername()
    except OSError:
        return None


class SocketListener:
    """A listening socket: accept peers one by one, or serve them all.

    Made by ``await acp.listen_tcp(...)`` or ``await acp.listen_unix(...)``;
    use it as an async context manager (or call ``aclose()``) to close it.
    """

    def __init__(self, sock: socket.socket, *, unlink: str | None = None) -> None:
        sock.setblocking(False)
        self._sock: socket.socket | None = sock
        self._fd = sock.fileno()
        self._family = sock.family
        self._unlink = unlink
        self._backend: Backend | None = None
        self.address: Any = sock.getsockname()
        """The bound address: ``(host, port, ...)`` for TCP, a path for Unix."""

    @property
    def port(self) -> int:
        """The TCP port (useful after binding port 0)."""
        if self._family not in (socket.AF_INET, socket.AF_INET6):
            raise AttributeError("a Unix-socket listener has no port")
        return int(self.address[1])

    async def accept(self) -> SocketTransport:
        """Wait for the next peer; raises ``anyio.ClosedResourceError`` once closed."""
        if self._backend is None:
            self._backend = current_backend()
        while True:
            sock = self._sock
            if sock is None:
                raise anyio.ClosedResourceError
            try:
                conn, _ = sock.accept()
            except BlockingIOError:
                pass
            except (ConnectionAbortedError, InterruptedError):
                continue  # the peer gave up before we got to it
            else:
                if self._family in (socket.AF_INET, socket.AF_INET6):
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return SocketTransport(conn)
            try:
                await self._backend.wait_readable(self._fd)
            except Exception:
                if self._sock is None:  # closed while we waited
                    raise anyio.ClosedResourceError from None
                raise

    async def serve(self, handler: Any, *, task_group: anyio.abc.TaskGroup | None = None) -> None:
        """Accept peers until the listener is closed; serve each in its own task.

        ``handler`` is a connection builder (each peer is served with
        ``builder.connect_to(transport)``) or an async function called with
        each peer's transport. A peer's connection failing is logged and ends
        that connection only. Returns when the listener is closed, after the
        running connections ended (or at once, with ``task_group``, which
        then runs them). Cancel the calling task to stop.
        """
        connect_to = getattr(handler, "connect_to", None)
        serve_one: Callable[[Transport], Awaitable[object]] = (
            connect_to if connect_to is not None else handler
        )

        async def run(transport: SocketTransport) -> None:
            try:
                await serve_one(transport)
            except Exception:
                log.exception("the connection with %r failed", transport.peer_address)
            finally:
                transport.close()

        async def loop(group: anyio.abc.TaskGroup) -> None:
            while True:
                try:
                    transport = await self.accept()
                except anyio.ClosedResourceError:
                    return
                group.start_soon(run, transport)

        if task_group is not None:
            await loop(task_group)
            return
        async with anyio.create_task_group() as group:
            await loop(group)

    async def aclose(self) -> None:
        """Stop listening (a waiting ``accept()`` raises ClosedResourceError)."""
        self.close()
        await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        """``aclose()`` without the checkpoint, for synchronous code."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        if self._backend is not None:
            self._backend.forget_fd(self._fd)
        sock.close()
        path = self._unlink
        if path is not None:
            try:
                if stat.S_ISSOCK(os.stat(path).st_mode):
                    os.unlink(path)
            except OSError:
                pass

    async def __aenter__(self) -> SocketListener:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self._sock is None else "listening"
        return f"<SocketListener {self.address!r} {state}>"


async def listen_tcp(
    host: str | None = "127.0.0.1", port: int = 0, *, backlog: int = DEFAULT_BACKLOG
) -> SocketListener:
    """Listen for ACP peers on TCP ``host:port`` (port 0: any free port).

    ``host=None`` listens on all interfaces (the first address family the
    system offers). The default is the loopback interface only: ACP carries
    file contents and permissions, so exposing it is a deliberate choice.
    """
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return SocketListener(sock)


async def listen_unix(
    path: str | os.PathLike[str], *, backlog: int = DEFAULT_BACKLOG
) -> SocketListener:
    """Listen for ACP peers on the Unix-domain socket ``path``.

    The socket file is created (an existing file there is an error, never
    replaced) and removed when the listener closes. A path starting with a
    NUL character names a socket in Linux's abstract namespace.
    """
    address = os.fspath(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    await anyio.lowlevel.checkpoint()
    return SocketListener(sock, unlink=None if address.startswith("\0") else address)
