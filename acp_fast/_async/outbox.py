"""The outgoing FIFO: every message a connection sends passes here.

Every send is a synchronous append to one FIFO, so a ``$/cancel_request`` can
never be written before its request (docs/semantics.md §2.3). The FIFO is
flushed with one write per loop iteration: all messages produced by one batch
of input, or by many tasks in one iteration, leave in one system call. A
request that is the first output since the last flush is written at once (see
``_enqueue``). A failed write stops output; see ``_output_failed``.
"""

from __future__ import annotations

import logging

from .._core import OutgoingRequest
from .._errors import Error
from .._io.backend import Backend
from .._io.channel import Channel, ChannelError
from . import _wire
from .handlers import PeerStyle
from .messages import CANCEL_REQUEST_METHOD, SUCCESSOR_METHOD
from .observe import Tap, WireRecorder

__all__ = ("HIGH_WATER", "Outbox")

log = logging.getLogger("acp_fast")

# A module global: reading an enum member off its class costs more (per message).
_SUCCESSOR = PeerStyle.SUCCESSOR

# Output above this size is handed to the transport at once instead of at the
# end of the loop iteration. Small, so that a peer in another process starts on
# the first messages of a batch while this side still produces the rest: with
# 64 requests in flight over stdio that took 60k to ~120k round trips/s (the
# two processes used to take turns), for ~1% more instructions in one process
# (256 KiB before; 1 and 4 KiB measured worse than 2).
_EAGER_FLUSH = 2 * 1024
# A notification is nobody's answer, and a stream of them is written in
# fewer, larger writes: each write is a turn of the peer's read loop
# (docs/architecture.md).
NOTIFICATION_FLUSH = 32 * 1024
# Above this many bytes held for the transport, senders that pace themselves
# (``await cx.drain()``, the typed helpers) wait.
HIGH_WATER = 1024 * 1024


class Outbox:
    """The connection's output: the FIFO, its flushing, and write failures."""

    def __init__(self, channel: Channel, backend: Backend) -> None:
        self._channel = channel
        self._backend = backend
        self._out: list[bytes] = []
        self._out_size = 0
        self._flush_scheduled = False
        self._wrote_early = False  # see _enqueue
        self._sync = False  # the dispatch loop runs synchronously and flushes itself
        self._output_closed = False
        self._output_broken: Error | None = None  # why writing stopped
        self._output_fatal = False  # ... and it was not the peer going away
        self._observer: Tap | None = None  # set by the builder (observe.py)
        self._wire: WireRecorder | None = None  # likewise: a trace, per write

    def _enqueue(self, data: bytes, early: bool = False, flush_at: int = _EAGER_FLUSH) -> None:
        if self._output_closed:
            raise self._output_broken or Error.internal_error("connection is no longer running")
        if self._observer is not None:
            data = self._observer.outgoing(data)
        if early and not (self._out or self._sync or self._flush_scheduled or self._wrote_early):
            # A request that is the first output since the last flush is
            # written at once; only what follows it is coalesced into one
            # write per loop iteration. A lone request (C=1) then costs no
            # extra loop iteration for its flush (one in four per round trip),
            # and with many senders it is one more write per iteration. Order
            # holds: nothing is queued ahead of it.
            self._wrote_early = True
            if self._wire is not None:
                self._wire.record_out(data)
            try:
                self._channel.write(data)
            except ChannelError as exc:
                self._output_failed(exc)
            return
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= flush_at:
            self._flush()
        elif not self._sync and not self._flush_scheduled:
            self._flush_scheduled = True
            self._backend.call_soon(self._flush)

    def _enqueue_update(self, data: bytes) -> bool:
        """``_enqueue(data, False, NOTIFICATION_FLUSH)``, then whether a sender
        that paces itself must drain (``_must_drain``): one call per update
        of an agent's stream, its busiest path (docs/architecture.md)."""
        if self._output_closed or self._observer is not None:
            self._enqueue(data, False, NOTIFICATION_FLUSH)
            return self._out_size + self._channel.pending > HIGH_WATER
        self._out.append(data)
        size = self._out_size = self._out_size + len(data)
        if size >= NOTIFICATION_FLUSH:
            self._flush()
            return self._channel.pending > HIGH_WATER
        if not self._sync and not self._flush_scheduled:
            self._flush_scheduled = True
            self._backend.call_soon(self._flush)
        return size + self._channel.pending > HIGH_WATER

    def _flush(self) -> None:
        self._flush_scheduled = False
        self._wrote_early = False
        out = self._out
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        self._out_size = 0
        if self._wire is not None:
            self._wire.record_out(data)
        try:
            self._channel.write(data)
        except ChannelError as exc:
            self._output_failed(exc)

    async def _drain(self) -> None:
        self._flush()
        try:
            await self._channel.drain()
        except ChannelError:
            pass

    def _output_failed(self, exc: BaseException) -> None:
        """Writing to the transport failed (the peer closed its end).

        A peer that goes away closes both directions: the write fails, and
        the read side sees EOF, which ends the connection the normal way. So
        a write failure does not fail the connection by itself: output stops
        (later sends fail), and the dispatch loop decides on its next read.
        If that read brings EOF, the peer is gone and the connection ends
        cleanly; if it brings data, the peer stopped reading but talks on,
        and the connection fails with the write error (docs/semantics.md §2.7).

        Any other write failure (a full disk, an I/O error) loses what we
        write with nobody told: it is logged at error level and fails the
        connection even when EOF follows.
        """
        if self._output_broken is not None:
            return
        self._output_broken = Error.internal_error(f"transport write failed: {exc}")
        self._output_closed = True
        self._out.clear()
        self._out_size = 0
        if _peer_went_away(exc):
            log.debug("transport write failed: %s", exc)
        else:
            self._output_fatal = True
            log.error("transport write failed: %s; nothing more can be sent", exc)

    def _send_cancel(self, request: OutgoingRequest) -> None:
        if self._observer is not None:
            self._observer.request_cancelled(request)
        params = {"requestId": request.id}
        if request.route is _SUCCESSOR:
            data = _wire.encode_notification(
                SUCCESSOR_METHOD, {"method": CANCEL_REQUEST_METHOD, "params": params}
            )
        else:
            data = _wire.encode_notification(CANCEL_REQUEST_METHOD, params)
        try:
            self._enqueue(data)
        except Error:
            log.debug("cancel for %s not sent: connection closed", request.id)

    def _send_cancel_from_anywhere(self, request: OutgoingRequest) -> None:
        # Garbage collection may run in any thread, and after the loop ended.
        if self._output_closed:
            return
        if self._backend.in_loop_thread():
            self._send_cancel(request)
        else:
            self._backend.call_soon_threadsafe(lambda: self._send_cancel(request))


def _peer_went_away(exc: BaseException | None) -> bool:
    """False when a write failed for a reason of our own side's: an OS error
    other than the peer closing its end (a full disk, EIO), looking through
    the causes. EPIPE, a reset, or a closed in-process or stream transport
    is the peer going away."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
            return True
        if isinstance(exc, OSError):
            return False
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return True
