"""A connection's in-flight request counts, for tests and health checks."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ("PendingRequests",)


class PendingRequests(NamedTuple):
    """How many requests a connection has in flight, at one moment.

    ``outgoing``: sent by us and not answered yet; ``incoming``: received
    from the peer and not answered yet.
    """

    outgoing: int
    incoming: int
