"""Transports: what a connection runs over.

A transport is a description (which descriptors, which command, which
streams); ``builder.connect*`` opens it on the running event loop as a
Channel (see acp_fast/_io/) and closes it when the connection ends.

* ``stdio()``: this process's stdin and stdout, whatever kind of file they are;
* ``ByteStreams(receive_stream, send_stream)``: any anyio byte streams;
* ``Subprocess(command, ...)``: a child process's stdin/stdout, shut down
  gracefully (close its stdin, wait, terminate, kill) when the connection ends;
* ``tcp(host, port)``, ``unix(path)``: connect to a listening peer;
  ``listen_tcp(...)``, ``listen_unix(...)``: accept peers (``SocketListener``),
  each as a ``SocketTransport``;
* ``FdTransport(read_fd, write_fd)``: raw descriptors of any kind;
* ``HttpTransport(url)``, ``WebSocketTransport(url)``: an agent served
  remotely (``acp_fast.http.AcpApp``), over Streamable HTTP or a WebSocket;
* ``acp_fast.testing.memory_pair()``: two in-process ends, no system calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import ByteStreams, FdTransport, Transport, stdio
from .sockets import SocketListener, SocketTransport, listen_tcp, listen_unix, tcp, unix
from .subprocess import Subprocess

# The remote transports bring HTTP and WebSocket machinery that a stdio agent
# never uses; they are imported on first use, off the start-up path.
_REMOTE = {
    "HttpTransport": ".remote.http_client",
    "WebSocketError": ".remote.ws_client",
    "WebSocketTransport": ".remote.ws_client",
}

if TYPE_CHECKING:
    from .remote.http_client import HttpTransport
    from .remote.ws_client import WebSocketError, WebSocketTransport


def __getattr__(name: str) -> object:
    module = _REMOTE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = (
    "ByteStreams",
    "FdTransport",
    "HttpTransport",
    "SocketListener",
    "SocketTransport",
    "Subprocess",
    "Transport",
    "WebSocketError",
    "WebSocketTransport",
    "listen_tcp",
    "listen_unix",
    "stdio",
    "tcp",
    "unix",
)
