"""Incoming requests: the Responder that answers one, exactly once.

A Responder is made for every incoming request before any handler runs
(rust-sdk-semantics §4.1). Answering consumes it; a second answer raises
RuntimeError. Its ``cancellation()`` marker reports the peer's
``$/cancel_request`` for the request, recorded by the dispatch loop before
handlers see the notification.

A responder dropped without answering answers -32603 "request handler dropped
its responder" when it is garbage-collected. The reference SDK does that only
for batch members and leaves a dropped individual request unanswered; here no
request is ever left hanging because a handler forgot it. A responder kept
alive (stored for later, moved into a task) is not affected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._core import IncomingRequest
from .._errors import Error
from .cancellation import MarkerState, RequestCancellation

if TYPE_CHECKING:
    from .connection import ConnectionTo, _Batch

__all__ = ("Responder",)

T = TypeVar("T")


class Responder(Generic[T]):
    """Answers one incoming request.

    ``method`` is the request's method as it came in (for a ``_proxy/successor``
    envelope, the envelope's method) and ``id`` its JSON-RPC id.
    """

    __slots__ = ("_batch", "_conn", "_done", "_incoming", "_slot", "method")

    def __init__(
        self,
        conn: ConnectionTo[Any],
        incoming: IncomingRequest,
        method: str,
        batch: _Batch | None = None,
        slot: int = -1,
    ) -> None:
        self._conn = conn
        self._incoming = incoming
        self.method = method
        self._batch = batch
        self._slot = slot
        self._done = False

    @property
    def id(self) -> Any:
        """The request's JSON-RPC id, as the peer sent it."""
        return self._incoming.id

    @property
    def answered(self) -> bool:
        """True once this responder answered."""
        return self._done

    def cancellation(self) -> RequestCancellation:
        """This request's cancellation marker (shared by repeated calls).

        If the peer already cancelled, the marker is already set. After the
        answer (or when the peer reused this id for a newer request) the
        marker is detached and never fires.
        """
        incoming = self._incoming
        if not self._conn._table.is_current(incoming):
            return RequestCancellation()
        state = incoming.marker
        if state is None:
            state = incoming.marker = MarkerState(incoming.cancelled)
        return RequestCancellation(state)  # type: ignore[arg-type]

    def respond(self, value: T | Any = None) -> None:
        """Answer with a result (a schema object, plain JSON values, or None)."""
        if self._done:
            self._finish()  # raises
        # _finish, inlined: this runs per request.
        self._done = True
        conn = self._conn
        conn._table.remove_incoming(self._incoming)
        conn._send_result(self, value)

    def respond_with_error(self, error: Error) -> None:
        """Answer with an error object."""
        if not isinstance(error, Error):
            raise TypeError(f"expected acp.Error, got {type(error).__name__}")
        self._finish()
        self._conn._send_error(self, error)

    def respond_with_result(self, result: T | Error | Any) -> None:
        """Answer with ``result``: an ``acp.Error`` is sent as the error."""
        if isinstance(result, Error):
            self.respond_with_error(result)
        else:
            self.respond(result)

    def respond_with_internal_error(self, message: str) -> None:
        """Answer -32603 with ``message`` as data."""
        self.respond_with_error(Error.internal_error(message))

    def _finish(self) -> None:
        if self._done:
            raise RuntimeError(f"request {self.id!r} ({self.method}) was already answered")
        self._done = True
        self._conn._table.remove_incoming(self._incoming)

    def __repr__(self) -> str:
        return f"<Responder id={self.id!r} method={self.method!r} answered={self._done}>"

    def __del__(self) -> None:
        if self._done:
            return
        try:
            self._done = True
            self._conn._responder_dropped(self)
        except Exception:
            pass
