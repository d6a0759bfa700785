"""Helpers for testing code built on acp_fast.

``memory_pair()`` joins two connections in one process without sockets or
pipes (the bytes still go through NDJSON framing), and ``socket_pair()``
joins them over a real socketpair.
"""

from __future__ import annotations

import socket

from ._transports.base import FdTransport, Transport
from ._transports.memory import MemoryTransport, memory_pair

__all__ = ("MemoryTransport", "memory_pair", "socket_pair")


def socket_pair() -> tuple[Transport, Transport]:
    """Two transports over a ``socket.socketpair()`` (closed at the end)."""
    left, right = socket.socketpair()
    left_fd, right_fd = left.detach(), right.detach()
    return FdTransport(left_fd, left_fd, close=True), FdTransport(right_fd, right_fd, close=True)
