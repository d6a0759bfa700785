"""The narrow interface between a connection and the handles it gives out.

``SentRequest``, ``PreparedRequest``, ``RequestCancellationHandle``,
``ResponseRouter`` and ``Responder`` hold a ``ConnectionPort``, not the
``ConnectionTo`` class: this is everything they may do with their connection.
The connection modules import the handles; the handles import only this.
"""

from __future__ import annotations

from typing import Any, Protocol

from .._core import OutgoingRequest, RequestTable
from .._errors import Error
from .._io.backend import Backend

__all__ = ("ConnectionPort", "Consumer")


class Consumer(Protocol):
    """Who takes a settled request's response (a result callback, a responder)."""

    async def run(self) -> None: ...


class ConnectionPort(Protocol):
    """What a handle may use of its connection."""

    # The backend's waiters and task identity, for awaiting a response.
    _backend: Backend
    # The dispatch loop's task while it runs (awaiting a response there deadlocks).
    _dispatch_task: object

    @property
    def _detaching(self) -> object:
        """A request whose handler runs its first step in that loop and will
        detach from it if it suspends (inbound.py): then awaiting is fine."""

    # The connection's requests both ways: responders check and drop theirs.
    _table: RequestTable
    # True once nothing more can be sent.
    _output_closed: bool

    def _enqueue(self, data: bytes, early: bool = False) -> None:
        """Append one encoded message to the outgoing FIFO."""

    def _publish(self, request: OutgoingRequest, payload: bytes | Error) -> None:
        """Register, send and arm a prepared request (or settle its failure)."""

    def _send_cancel(self, request: OutgoingRequest) -> None:
        """Send ``$/cancel_request`` for ``request`` (the caller took it armed)."""

    def _send_cancel_from_anywhere(self, request: OutgoingRequest) -> None:
        """``_send_cancel`` from any thread, or after the loop ended."""

    def _settle(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        """Fill the request's response slot and hand it to its consumer."""

    def _settle_from_anywhere(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        """``_settle`` from any thread."""

    def _check_running(self) -> None:
        """Raise ``acp.Error`` unless the connection still runs."""

    def _run_late_consumer(self, consumer: Consumer) -> None:
        """Deliver an already settled request to ``consumer`` in a task."""

    def _fail(self, error: BaseException) -> None:
        """Fail the connection with ``error`` (the first one wins)."""
