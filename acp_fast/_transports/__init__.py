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

from .base import ByteStreams, FdTransport, Transport, stdio
from .remote.http_client import HttpTransport
from .remote.ws_client import WebSocketError, WebSocketTransport
from .sockets import SocketListener, SocketTransport, listen_tcp, listen_unix, tcp, unix
from .subprocess import Subprocess

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
