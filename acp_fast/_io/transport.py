"""The Transport interface: what a connection runs over."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from .backend import Backend
from .channel import Channel

__all__ = ("Transport",)


class Transport:
    """Something a connection can run over.

    Subclasses implement ``_open(backend)``: an async context manager that
    yields a Channel while the connection runs and releases it afterwards.
    The connection leaves that context inside a shielded cancel scope of its
    own, so ``_open`` must not hold a task group or cancel scope open across
    its ``yield`` (scopes must close in the reverse order of opening); a
    background task it needs runs free-standing (see ``Subprocess``).
    """

    def _open(self, backend: Backend) -> AbstractAsyncContextManager[Channel]:
        raise NotImplementedError
