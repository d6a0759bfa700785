"""Helpers for testing code built on acp_fast.

``memory_pair()`` joins two connections in one process without sockets or
pipes (the bytes still go through NDJSON framing); ``socket_pair()`` joins
them over a real socketpair, and ``pipe_pair()`` over two OS pipes.
"""

from __future__ import annotations

import os
import socket

from ._transports.base import FdTransport, Transport
from ._transports.memory import MemoryTransport, memory_pair

__all__ = ("MemoryTransport", "memory_pair", "pipe_pair", "socket_pair")


def socket_pair() -> tuple[Transport, Transport]:
    """Two transports over a ``socket.socketpair()`` (closed at the end)."""
    left, right = socket.socketpair()
    left_fd, right_fd = left.detach(), right.detach()
    return FdTransport(left_fd, left_fd, close=True), FdTransport(right_fd, right_fd, close=True)


def pipe_pair() -> tuple[Transport, Transport]:
    """Two transports over two OS pipes, one each way (closed at the end)."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    return FdTransport(a_read, a_write, close=True), FdTransport(b_read, b_write, close=True)
