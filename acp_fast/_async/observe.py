"""Observers: see every message a connection reads and writes.

An ``Observer`` registered with ``builder.observe(observer)`` is told about
every message that crosses the connection, as the raw bytes of its line, and
about the life of each request the connection sends: sent, cancelled (the
``$/cancel_request`` went out), answered, failed (docs/tracing.md).

A connection without observers pays one ``is not None`` test at each of the
few points where a message passes (outbox.py, inbound.py, dispatch.py); a
trace (a ``WireRecorder``) is called once per read and once per write
instead. The methods run in the connection's loop, in line with the
traffic: they must be quick and must not raise (an exception is logged and
the observer goes on).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .._core import SETTLED_ERROR, SETTLED_OK, OutgoingRequest, OversizedLine
from .._errors import Error

__all__ = ("INCOMING", "OUTGOING", "Observer", "OutgoingRewriter", "Tap", "WireRecorder")

log = logging.getLogger("acp_fast")

INCOMING = "in"
OUTGOING = "out"


class Observer:
    """Base class of connection observers; every method does nothing.

    Override the ones you need. ``data`` is one message as it is on the wire
    (a JSON-RPC object or batch, without the trailing newline for incoming
    lines). An incoming line larger than the connection's limit arrives as
    its first bytes only, with ``oversized`` set to its full size.
    """

    def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
        """A message was read (``direction`` is ``"in"``) or queued to be
        written (``"out"``)."""

    def on_request_sent(self, request_id: int, method: str) -> None:
        """A request of ours went out."""

    def on_request_cancelled(self, request_id: int, method: str) -> None:
        """We sent ``$/cancel_request`` for one of our requests."""

    def on_request_answered(self, request_id: int, method: str) -> None:
        """One of our requests got a result."""

    def on_request_failed(self, request_id: int, method: str, error: Error) -> None:
        """One of our requests got an error answer, or can no longer get one
        (the connection closed)."""

    def on_close(self) -> None:
        """The connection ended; nothing more will be reported."""


class OutgoingRewriter:
    """An observer that may change what is sent (acp_fast.otel adds trace
    context to requests). Internal: the rewriting runs before any observer
    sees the message, so traces show the bytes as written."""

    def rewrite_outgoing(self, data: bytes) -> bytes:
        return data


class WireRecorder:
    """An observer that takes the traffic a read or a write at a time
    instead of a message at a time (the trace recorder, trace.py).
    Internal: the connection calls these once per read of its transport and
    once per write to it, and never calls such an observer's ``on_message``
    or request methods (only ``on_close``)."""

    def record_in(self, lines: list[Any], size: int) -> None:
        """The lines framed from one read of ``size`` bytes (bytes without
        their newline, or the core's ``OversizedLine``)."""

    def record_out(self, data: bytes) -> None:
        """One write: whole messages, each with its newline."""


class _WireFanOut(WireRecorder):
    __slots__ = ("_recorders",)

    def __init__(self, recorders: tuple[WireRecorder, ...]) -> None:
        self._recorders = recorders

    def record_in(self, lines: list[Any], size: int) -> None:
        for recorder in self._recorders:
            try:
                recorder.record_in(lines, size)
            except Exception:
                log.exception("observer %r failed", recorder)

    def record_out(self, data: bytes) -> None:
        for recorder in self._recorders:
            try:
                recorder.record_out(data)
            except Exception:
                log.exception("observer %r failed", recorder)


class Tap:
    """What a connection calls: fans each event out to its observers.

    The per-message observers are called through the Tap; wire recorders
    through ``wire`` (the connection holds both, each only when there is
    one, so a traced connection without other observers pays nothing per
    message)."""

    __slots__ = ("_all", "_observers", "_rewriters", "wire")

    def __init__(self, observers: Sequence[Observer]) -> None:
        self._all = tuple(observers)
        self._observers = tuple(o for o in observers if not isinstance(o, WireRecorder))
        self._rewriters = tuple(o for o in observers if isinstance(o, OutgoingRewriter))
        recorders = tuple(o for o in observers if isinstance(o, WireRecorder))
        self.wire: WireRecorder | None = (
            None
            if not recorders
            else recorders[0]
            if len(recorders) == 1
            else _WireFanOut(recorders)
        )

    @property
    def per_message(self) -> bool:
        """Whether any observer wants each message (or rewrites them)."""
        return bool(self._observers or self._rewriters)

    def outgoing(self, data: bytes) -> bytes:
        for rewriter in self._rewriters:
            try:
                data = rewriter.rewrite_outgoing(data)
            except Exception:
                log.exception("observer %r failed", rewriter)
        for observer in self._observers:
            try:
                observer.on_message(OUTGOING, data)
            except Exception:
                log.exception("observer %r failed", observer)
        return data

    def incoming(self, line: bytes | OversizedLine) -> None:
        if type(line) is bytes:
            data, size = line, None
        else:
            oversized: Any = line
            data, size = bytes(oversized.head), int(oversized.size)
        for observer in self._observers:
            try:
                observer.on_message(INCOMING, data, size)
            except Exception:
                log.exception("observer %r failed", observer)

    def request_sent(self, request: OutgoingRequest) -> None:
        for observer in self._observers:
            try:
                observer.on_request_sent(request.id, request.method)
            except Exception:
                log.exception("observer %r failed", observer)

    def request_cancelled(self, request: OutgoingRequest) -> None:
        for observer in self._observers:
            try:
                observer.on_request_cancelled(request.id, request.method)
            except Exception:
                log.exception("observer %r failed", observer)

    def request_settled(self, request: OutgoingRequest, settlement: int, value: Any) -> None:
        for observer in self._observers:
            try:
                if settlement == SETTLED_OK:
                    observer.on_request_answered(request.id, request.method)
                elif settlement == SETTLED_ERROR and isinstance(value, Error):
                    observer.on_request_failed(request.id, request.method, value)
                else:
                    observer.on_request_failed(
                        request.id, request.method, Error.never_received(request.method)
                    )
            except Exception:
                log.exception("observer %r failed", observer)

    def close(self) -> None:
        for observer in self._all:
            try:
                observer.on_close()
            except Exception:
                log.exception("observer %r failed", observer)
