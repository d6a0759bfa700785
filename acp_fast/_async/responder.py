"""Incoming requests: the Responder that answers one, exactly once.

A Responder is made for every incoming request before any handler runs
(docs/semantics.md §4.1). Answering consumes it; a second answer raises
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

import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

from .._core import IncomingRequest
from .._errors import Error
from . import _wire
from .cancellation import MarkerState, RequestCancellation
from .port import ConnectionPort

__all__ = ("Batch", "Responder")

log = logging.getLogger("acp_fast")

T = TypeVar("T")


class Batch:
    """One incoming JSON-RPC batch: its response slots (docs/semantics.md §1.5).

    The array it writes is at most ``max_bytes`` long (plus one short error
    per entry): an answer that would pass that is replaced by a -32603 error
    under its id, so that a batch cannot make us write a line no peer reads.
    """

    __slots__ = ("dispatched", "enqueue", "max_bytes", "remaining", "size", "slots")

    def __init__(self, enqueue: Callable[[bytes], None], max_bytes: int) -> None:
        self.enqueue = enqueue
        self.slots: list[bytes | None] = []
        self.remaining = 0
        self.dispatched = False
        self.max_bytes = max_bytes
        self.size = 2

    def new_slot(self) -> int:
        self.slots.append(None)
        self.remaining += 1
        return len(self.slots) - 1

    def fill(self, slot: int, line: bytes, request_id: Any = None) -> None:
        if self.slots[slot] is not None:
            return  # the first completion wins
        if self.size + len(line) > self.max_bytes:
            error = Error.internal_error(
                {"reason": "batch_answer_too_large", "limit": self.max_bytes}
            )
            line = _wire.encode_error(request_id, error.to_dict())
        self.size += len(line)
        self.slots[slot] = line[:-1]  # without its newline
        self.remaining -= 1
        self.send_if_complete()

    def send_if_complete(self) -> None:
        if self.dispatched and self.remaining == 0 and self.slots:
            lines = self.slots
            self.slots = []
            self.enqueue(b"[" + b",".join(lines) + b"]\n")  # type: ignore[arg-type]


class Responder(Generic[T]):
    """Answers one incoming request.

    ``method`` is the request's method as it came in (for a ``_proxy/successor``
    envelope, the envelope's method) and ``id`` its JSON-RPC id.
    """

    __slots__ = ("_batch", "_conn", "_done", "_incoming", "_slot", "method")

    def __init__(
        self,
        conn: ConnectionPort,
        incoming: IncomingRequest,
        method: str,
        batch: Batch | None = None,
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
        self._conn._table.remove_incoming(self._incoming)
        try:
            line = _wire.encode_result(self._incoming.id, value)
        except (TypeError, ValueError, msgspec.EncodeError, RecursionError) as exc:
            # RecursionError: nested too deep to encode. It used to escape
            # after the responder was marked answered: no answer at all.
            error = Error.internal_error(f"failed to encode the result of `{self.method}`")
            self._send(_wire.encode_error(self.id, error.to_dict()))
            raise TypeError(f"cannot encode the result of {self.method!r}: {exc}") from exc
        if self._batch is None:  # _send, inlined (per request)
            self._conn._enqueue(line)
        else:
            self._batch.fill(self._slot, line, self._incoming.id)

    def respond_with_error(self, error: Error) -> None:
        """Answer with an error object."""
        if not isinstance(error, Error):
            raise TypeError(f"expected acp.Error, got {type(error).__name__}")
        self._finish()
        self._send(_error_line(self.id, error))

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

    def _send(self, line: bytes) -> None:
        if self._batch is not None:
            self._batch.fill(self._slot, line, self._incoming.id)
        else:
            self._conn._enqueue(line)

    def _answer_dropped(self) -> None:
        conn = self._conn
        conn._table.remove_incoming(self._incoming)
        if conn._output_closed:
            return
        error = Error.internal_error(f"request handler dropped its responder for `{self.method}`")
        log.warning("responder for %r (id %r) dropped unanswered", self.method, self.id)
        self._send(_wire.encode_error(self.id, error.to_dict()))

    def __repr__(self) -> str:
        return f"<Responder id={self.id!r} method={self.method!r} answered={self._done}>"

    def __del__(self) -> None:
        if self._done:
            return
        try:
            self._done = True
            backend = self._conn._backend
            if backend.in_loop_thread():
                self._answer_dropped()
            elif not self._conn._output_closed:
                backend.call_soon_threadsafe(self._answer_dropped)
        except Exception:
            pass


def _error_line(request_id: Any, error: Error) -> bytes:
    """The encoded error answer; never fails, whatever ``error`` holds."""
    if not -(2**31) <= error.code < 2**31:
        # Peers read codes as 32-bit integers (the Rust SDK's i32): a code
        # out of that range made the whole answer unreadable there, and
        # the request hang. Keep what it said in data.
        kept: dict[str, Any] = {"code": str(error.code)}
        if error.data is not None:
            kept["data"] = error.data
        error = Error(-32603, error.message, kept)
    try:
        return _wire.encode_error(request_id, error.to_dict())
    except (TypeError, ValueError, msgspec.EncodeError, RecursionError):
        # Unencodable or too deeply nested data, or a message with a lone
        # surrogate (those used to end the connection). ascii() never fails
        # to encode; a __repr__ that raises is not ours to raise.
        data: Any = None
        if error.data is not None:
            try:
                data = ascii(error.data)
            except Exception:
                data = f"<unprintable {type(error.data).__name__}>"
        try:
            return _wire.encode_error(request_id, Error(error.code, error.message, data).to_dict())
        except (TypeError, ValueError, msgspec.EncodeError):
            message = str(error.message).encode("utf-8", "backslashreplace").decode()
            return _wire.encode_error(request_id, Error(error.code, message, data).to_dict())
