"""Inbound: the dispatch loop that reads the transport and classifies entries.

One loop per connection reads the channel, hands the bytes to the core's
framer, and takes the lines one at a time in arrival order (docs/semantics.md
§2.3). Each line is decoded into an envelope and classified by the core; one
switch (``_take``) sends a request, a notification or a response to dispatch,
for a lone message and for each entry of a batch alike. Lines that are not
JSON, too large or not JSON-RPC get their error answer here, and the loop goes
on. Handlers run in the loop, so a slow handler stops reading and the peer's
writes block: that is the backpressure, and it bounds memory. The exception
is a request that *detaches* (a class-API method that suspends in its first
step, see ``Detachable``): the loop goes on reading in another task, and the
request finishes in the old one (docs/semantics.md §2.4, eager start). A request that
arrives while more than ``HIGH_WATER`` of our output is unwritten waits, and
the loop with it, until the peer has taken that output (docs/semantics.md
§2.4, output backpressure); before each read, a class-API endpoint with a
long queue may let its waiting requests run (``Admission``).
"""

from __future__ import annotations

import json
import logging
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Iterator
from contextvars import Context, copy_context
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import msgspec

from .._core import (
    ERROR_RESPONSE,
    INVALID_CALL,
    MISSING,
    NOTIFICATION,
    PARAMS_ABSENT,
    REQUEST,
    RESULT_RESPONSE,
    SETTLED_ERROR,
    SETTLED_OK,
    SHAPE_CALL,
    SHAPE_RESPONSE,
    LineBuffer,
    OversizedLine,
    RequestTable,
    classify,
    classify_envelope,
    params_head_of,
    scan_head,
)
from .._errors import Error
from .._io.backend import Backend, Waiter
from .._io.channel import Channel, ChannelError
from . import _wire
from .dispatch import (
    Detachable,
    DetachToken,
    Dispatcher,
    detached_request,
    is_abort,
    is_spurious_cancel,
)
from .handlers import HandlerEntry
from .outbox import HIGH_WATER
from .requests import _Consumer
from .responder import Batch

if TYPE_CHECKING:
    from .roles import Role

__all__ = ("Admission", "Detached", "Inbound")

log = logging.getLogger("acp_fast")

_BOM = b"\xef\xbb\xbf"

# data.line of a parse error shows at most this many characters.
_LINE_ECHO = 4096


def _reject_constant(name: str) -> None:
    raise ValueError(name)


def _unreadable_json(line: bytes, exc: BaseException | None) -> str | None:
    """Why a line that *is* JSON could not be read, or None when it is not
    JSON at all (docs/semantics.md §1.3: the parse error then carries only
    ``data.line``, as the Rust SDK's does)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to decode"
    if isinstance(exc, msgspec.ValidationError):
        return "a number out of range"  # the only value the decoder refuses by type
    try:
        # Only lines that failed to decode come here: the second opinion is
        # off the hot path.
        # Strict UTF-8, then text: bytes would let a BOM pass.
        json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None
    # Valid JSON the decoder refuses: an escaped lone surrogate (JSON allows
    # "\ud800"; a Python str can hold it, UTF-8 cannot).
    return "a string with an unpaired surrogate escape"


MAX_BATCH_ENTRIES = 1000
"""A batch with more entries is answered with one -32600 error and none of
its entries runs (docs/semantics.md §1.5)."""


@types.coroutine
def _resume(
    coroutine: Coroutine[Any, Any, Any], yielded: Any
) -> Generator[Any, Any, BaseException | None]:
    """Go on awaiting ``coroutine``, which already yielded ``yielded`` once.

    The dispatch loop runs each handler's first step itself, to learn whether
    it completes without suspending (then no flush needs scheduling). When it
    does suspend, this passes its wait to the task runner and drives the rest,
    exactly as ``await`` would.

    An abort (see ``is_abort``) raised by the coroutine is returned rather
    than raised, so that the loop can tell it from the GeneratorExit of its
    own closing (re-raised here) and stop the connection with it.
    """
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            step: Callable[[Any], Any] = coroutine.throw
            value: Any = exc
        else:
            step, value = coroutine.send, sent
        try:
            yielded = step(value)
        except StopIteration:
            return None
        except BaseException as raised:
            if is_abort(raised) or is_spurious_cancel(raised):
                return raised
            raise


@types.coroutine
def _in_context(context: Context, coroutine: Coroutine[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Await ``coroutine`` with each of its steps run in ``context``, as a
    task started in that context would run it (the spare reader's task, whose
    own context is the last request's: see ``Inbound._reader``)."""
    run = context.run
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            if error is None:
                yielded = run(coroutine.send, value)
            else:
                yielded = run(coroutine.throw, error)
        except StopIteration as stop:
            return stop.value
        error = None
        try:
            value = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            error = exc
            value = None


class SpareReader:
    """A reader task parked until a request detaches (``Inbound._reader``):
    its waiter, and the lines and context it is handed."""

    __slots__ = ("context", "lines", "waiter")

    def __init__(self, waiter: Waiter) -> None:
        self.waiter = waiter
        self.lines: Iterator[bytes | OversizedLine] | None = None
        self.context: Context | None = None


class Detached:
    """A request that suspended in its first step, and the lines the next
    reader takes up (returned by ``Inbound._read_loop``)."""

    __slots__ = ("lines", "pending", "token", "yielded")

    def __init__(
        self,
        pending: Coroutine[Any, Any, object],
        yielded: Any,
        token: DetachToken,
        lines: Iterator[bytes | OversizedLine],
    ) -> None:
        self.pending = pending
        self.yielded = yielded
        self.token = token
        self.lines = lines


class Admission(Protocol):
    """Lets waiting requests run before more input is read."""

    def congested(self) -> bool: ...

    async def make_room(self) -> None:
        """Return when reading may go on (it must, if nothing progresses)."""


class Inbound(Dispatcher):
    """The read loop, framing hand-off, classification, bad lines, batches."""

    # Set by the connection's lifecycle (connection.py).
    _closed: anyio.Event
    _drain_scope: anyio.CancelScope | None

    def __init__(
        self,
        channel: Channel,
        backend: Backend,
        role: Role,
        handlers: list[HandlerEntry],
        table: RequestTable,
        max_message_size: int,
    ) -> None:
        super().__init__(channel, backend, role, handlers, table)
        self._framer = LineBuffer(max_message_size)
        self._max_message_size = max_message_size
        self._dispatch_task: object = None
        # Consulted before each read: a class-API endpoint with a long queue
        # of waiting requests (acp_fast/_typed/endpoint.py).
        self._admission: Admission | None = None
        # During a handler's first step in the loop: True while a request
        # may detach (not in a batch, not behind backpressure), and the
        # token its handler leaves to detach by if it suspends (DetachToken).
        self._may_detach = False
        self._detaching = None
        self._non_json: deque[str] = deque(maxlen=5)
        self._spare_reader: SpareReader | None = None  # see _reader
        self._at_start = True  # no byte read yet past a possible BOM
        self._first_bytes = b""  # the first bytes, while they may be part of one

    async def _read_loop(
        self, rest: Iterator[bytes | OversizedLine] | None = None
    ) -> bool | Detached:
        """Read and dispatch until EOF (returns True), a failure (False), or a
        request that detaches (returned: see ``Detachable``). ``rest``: the
        lines a detached request's reader left, taken up first."""
        self._dispatch_task = self._backend.current_task()
        channel = self._channel
        framer = self._framer
        receive = self._receive
        wire = self._wire  # a trace: one record per read (observe.py)
        try:
            while True:
                self._flush()
                if rest is not None:
                    lines, rest = rest, None
                    if self._new_dynamic:
                        # Handlers the detached request added before it
                        # suspended take effect before the next entry (§2.5).
                        await self._add_new_dynamic_handlers()
                else:
                    admission = self._admission
                    if admission is not None and admission.congested():
                        await admission.make_room()
                    try:
                        data = await channel.receive()
                    except ChannelError as exc:
                        during = " during outgoing drain" if self._drain_scope is not None else ""
                        self._fail(Error.internal_error(f"transport read failed{during}: {exc}"))
                        return False
                    if not data:
                        break
                    if self._at_start:
                        # docs/semantics.md §1.4: a UTF-8 byte-order mark before
                        # the first line is skipped (only there: per read, not
                        # per line).
                        data = self._strip_bom(data)
                        if not data:
                            continue
                    if self._output_broken is not None and not self._closed.is_set():
                        self._fail(self._output_broken)
                        return False
                    framed = framer.feed(data)
                    channel.read_hint = framer.buffered
                    if wire is not None and framed:
                        wire.record_in(framed, len(data))
                    lines = iter(framed)
                self._sync = True
                try:
                    for line in lines:
                        pending = receive(line)
                        if pending is not None:
                            # Run the entry's first step here; only if it
                            # suspends does anything need flushing first.
                            aborted: BaseException | None = None
                            self._may_detach = True
                            try:
                                yielded = pending.send(None)
                            except StopIteration:
                                pass
                            except BaseException as exc:
                                if not (is_abort(exc) or is_spurious_cancel(exc)):
                                    raise
                                aborted = exc
                            else:
                                detaching = self._detaching
                                if detaching is not None:
                                    # A request suspended: it goes on in this
                                    # task, and reading in a new one.
                                    self._may_detach = False
                                    self._detaching = None
                                    self._sync = False
                                    self._flush()
                                    return Detached(pending, yielded, detaching, lines)
                                self._may_detach = False
                                self._sync = False
                                self._flush()
                                try:
                                    aborted = await _resume(pending, yielded)
                                finally:
                                    self._sync = True
                            finally:
                                self._may_detach = False
                                self._detaching = None
                            if aborted is not None:
                                if is_spurious_cancel(aborted):
                                    log.error("a handler raised CancelledError", exc_info=aborted)
                                    aborted = None
                                    continue
                                # A handler raised KeyboardInterrupt, SystemExit
                                # or the like (its request was answered): stop
                                # now, and let connect* raise it unwrapped
                                # rather than as a task group's exception group.
                                self._fail(aborted)
                                return False
                        if self._new_dynamic:
                            await self._add_new_dynamic_handlers()
                finally:
                    self._sync = False
            if self._at_start and self._first_bytes:
                framer.feed(self._first_bytes)  # a lone prefix of a BOM at EOF
            rest_line = framer.close()
            if rest_line is not None:
                if wire is not None:
                    wire.record_in([rest_line], 0)
                pending = receive(rest_line)
                if pending is not None:
                    await pending
            self._flush()
        finally:
            self._dispatch_task = None
        return True

    async def _read(self, rest: Iterator[bytes | OversizedLine] | None = None) -> bool | None:
        """Read until EOF (True) or a failure (False). When a request detaches
        (see ``Detachable``), another task reads on and this one finishes the
        request, then returns None."""
        with anyio.CancelScope() as scope:
            outcome = await self._read_loop(rest)
            if not isinstance(outcome, Detached):
                return outcome
            detached = outcome
            entry: Detachable = detached_request(detached.token)
            self._hand_over(detached.lines, entry.context)
            # The peer's $/cancel_request stops the request at its current
            # await: this task now runs it alone. (The loop fires the marker
            # from its own task, never in this scope: Backend.cancel.)
            state = entry.responder.cancellation()._state
            cancel = partial(self._backend.cancel, scope)
            if state.fired:
                scope.cancel()
            else:
                state.add_callback(cancel)
            try:
                aborted = await _resume(detached.pending, detached.yielded)
            finally:
                state.remove_callback(cancel)
                entry.finished()
            if aborted is not None:
                if is_spurious_cancel(aborted):
                    log.error("a handler raised CancelledError", exc_info=aborted)
                else:
                    self._fail(aborted)  # as in the loop (see _read_loop)
        if scope.cancelled_caught:
            entry.cancelled_while_detached()
        return None

    def _hand_over(self, lines: Iterator[bytes | OversizedLine], context: Context | None) -> None:
        """Reading goes on without the task of a request that detached: in
        the parked spare reader, woken, or else in a new task. Either reads
        in ``context``, the loop's as it was before the request's first step
        (docs/semantics.md §2.4), or (None) in a copy of the current one."""
        spare = self._spare_reader
        if spare is not None:
            # A waiter woken instead of a task started: a task of anyio's task
            # group costs a cancel scope, an event and a wrapper coroutine.
            self._spare_reader = None
            spare.lines = lines
            spare.context = context if context is not None else copy_context()
            self._backend.wake(spare.waiter)
            return
        group = self._task_group
        assert group is not None
        if context is None:
            group.start_soon(self._reader, lines)
        else:
            context.run(group.start_soon, self._reader, lines)

    async def _reader(self, rest: Iterator[bytes | OversizedLine] | None = None) -> None:
        """A reader's task (the first one, and those started by ``_hand_over``).

        Once a request that detached from it has finished here, the task
        parks as the connection's spare reader, unless one is parked
        already, and the next request that detaches hands it the reading.
        """
        detached = await self._read_to_end(rest)
        while detached:
            if self._spare_reader is not None or not self._running:
                return
            spare = self._spare_reader = SpareReader(self._backend.new_waiter())
            try:
                await spare.waiter
            except BaseException:
                if self._spare_reader is spare:
                    self._spare_reader = None
                raise
            assert spare.context is not None and spare.lines is not None
            detached = await _in_context(spare.context, self._read_to_end(spare.lines))

    async def _read_to_end(self, rest: Iterator[bytes | OversizedLine] | None) -> bool:
        """``_read`` and what the connection's lifecycle runs after it
        (connection.py); True when a request detached from this task and has
        finished."""
        raise NotImplementedError

    def _strip_bom(self, data: bytes) -> bytes:
        data = self._first_bytes + data
        if len(data) < len(_BOM) and _BOM.startswith(data):
            self._first_bytes = data  # wait for more
            return b""
        self._at_start = False
        self._first_bytes = b""
        return data[len(_BOM) :] if data.startswith(_BOM) else data

    def _receive(self, line: bytes | OversizedLine) -> Coroutine[Any, Any, object] | None:
        """Handle one line; returns a coroutine when handlers must run."""
        if self._observer is not None:
            self._observer.incoming(line)
        if type(line) is not bytes:
            self._receive_oversized(cast(OversizedLine, line))
            return None
        try:
            envelope = _wire.decode_envelope(line)
        except msgspec.ValidationError:
            return self._receive_non_object(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            # RecursionError: nested too deep to decode. Like serde_json's
            # depth limit in the Rust SDK, that is a parse error.
            self._receive_unparsable(line, exc)
            return None
        kind = classify_envelope(envelope)  # one call into the core per message
        if (
            kind == RESULT_RESPONSE
            and not self._dynamic
            and not self._response_handlers
            and self._observer is None
        ):
            # _take, _receive_response and _settle, inlined for the answer to
            # a request a task awaits (per response; dispatch.py has the
            # rules): settled, its waiter woken, nothing else to run.
            request = self._table.take_response(envelope.id)
            if request is not None:
                consumer = request.consumer
                if (
                    consumer is not None
                    and request.data is None
                    and not isinstance(consumer, _Consumer)
                ):
                    if request.settle(SETTLED_OK, envelope.result):
                        request.consumer = None
                        self._backend.wake(consumer)  # type: ignore[arg-type]
                    return None
                return self._route_response(request, SETTLED_OK, envelope.result)
        return self._take(kind, envelope, None)

    def _take(
        self, kind: int, entry: _wire.Envelope, batch: Batch | None
    ) -> Coroutine[Any, Any, object] | None:
        """The switch on an entry's kind, for lone messages and batch entries."""
        if kind == RESULT_RESPONSE:
            return self._receive_response(entry.id, SETTLED_OK, entry.result)
        if kind == REQUEST:
            if self._channel.pending > HIGH_WATER:
                return self._receive_request_later(entry, batch)
            return self._receive_request(entry.id, entry.method, entry.params, batch)
        if kind == NOTIFICATION:
            return self._receive_notification(entry.method, entry.params)
        if kind == ERROR_RESPONSE:
            return self._receive_response(entry.id, SETTLED_ERROR, Error.from_dict(entry.error))
        if kind == INVALID_CALL:
            line = _wire.encode_error(None, Error.invalid_request().to_dict())
            if batch is None:
                self._enqueue(line)
            else:
                batch.fill(batch.new_slot(), line)
        else:
            log.debug("dropped an invalid response-shaped message (id %.200r)", entry.id)
        return None

    async def _receive_request_later(self, entry: _wire.Envelope, batch: Batch | None) -> None:
        """Output backpressure (docs/semantics.md §2.4): the peer has not taken
        more than HIGH_WATER of what we wrote, so this request (and all that
        follows it) waits until the output has drained. What came before it,
        responses included, was handled: a peer waiting on us is not stuck."""
        await self._drain()
        pending = self._receive_request(entry.id, entry.method, entry.params, batch)
        if pending is not None:
            await pending

    def _receive_unparsable(self, line: bytes, exc: BaseException | None = None) -> None:
        if not line.strip():
            return  # whitespace between messages
        # The last few kept: what a process writes to stdout that is not
        # JSON (a crash message, a banner) says why it ended.
        self._non_json.append(line[:500].decode("utf-8", "replace"))
        text = line.decode("utf-8", "replace")
        if len(text) > _LINE_ECHO:
            text = text[:_LINE_ECHO] + f"... ({len(line)} bytes)"
        data = {"line": text}
        reason = _unreadable_json(line, exc)
        if reason is not None:
            data["error"] = reason
        self._enqueue(_wire.encode_error(None, Error.parse_error(data).to_dict()))

    def _receive_oversized(self, line: OversizedLine) -> None:
        # Too large to decode: answer what can be answered (bad input gets a
        # clear error and loses nothing).
        request_id, shape = scan_head(line.head)
        if request_id is MISSING and line.id_text:
            # An "id" past the head: the framer found its text while the line
            # streamed through (docs/semantics.md §1.4).
            request_id, _ = scan_head(b'{"id":' + line.id_text + b"}")
        data = {
            "reason": "message_too_large",
            "size": line.size,
            "limit": self._max_message_size,
        }
        self._limited_log.warning(
            "oversized",
            "refused a %d-byte message (limit %d)",
            line.size,
            self._max_message_size,
        )
        if shape == SHAPE_RESPONSE or (
            shape != SHAPE_CALL and type(request_id) is int and self._table.pending(request_id)
        ):
            request = self._table.take_response(request_id)
            if request is not None:
                self._settle(
                    request,
                    SETTLED_ERROR,
                    Error.internal_error({**data, "method": request.method}),
                )
            return
        answer_id = None if request_id is MISSING else request_id
        self._enqueue(_wire.encode_error(answer_id, Error.invalid_request(data).to_dict()))

    def _receive_non_object(self, line: bytes) -> Coroutine[Any, Any, object] | None:
        if line.count(b",") >= MAX_BATCH_ENTRIES and _wire.has_more_entries(
            line, MAX_BATCH_ENTRIES
        ):
            # Refused before its entries are decoded: a line of a few MB can
            # hold millions of tiny entries, each a Python object.
            self._refuse_batch()
            return None
        try:
            value = _wire.loads(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            # The envelope decoder refused a value that is JSON but not one we
            # can read: a number out of range (1e400) or nesting too deep.
            self._receive_unparsable(line, exc)
            return None
        if type(value) is list and value:
            return self._receive_batch(value)
        self._enqueue(_wire.encode_error(None, Error.invalid_request().to_dict()))
        return None

    def _refuse_batch(self) -> None:
        data = {"reason": "batch_too_large", "limit": MAX_BATCH_ENTRIES}
        self._limited_log.warning(
            "batch_too_large", "refused a batch of more than %d entries", MAX_BATCH_ENTRIES
        )
        self._enqueue(_wire.encode_error(None, Error.invalid_request(data).to_dict()))

    async def _receive_batch(self, entries: list[Any]) -> None:
        # A batch's requests do not detach: their entries are offered one
        # after another by this coroutine (class-API ones queue for workers).
        self._may_detach = False
        batch = Batch(self._enqueue, self._max_message_size)
        for entry in entries:
            if type(entry) is not dict:
                line = _wire.encode_error(None, Error.invalid_request().to_dict())
                batch.fill(batch.new_slot(), line)
                continue
            params = entry.get("params", MISSING)
            envelope = _wire.Envelope(
                entry.get("jsonrpc", MISSING),
                entry.get("id", MISSING),
                entry.get("method", MISSING),
                params,
                entry.get("result", MISSING),
                entry.get("error", MISSING),
            )
            kind = classify(
                envelope.jsonrpc,
                envelope.id,
                envelope.method,
                PARAMS_ABSENT if params is MISSING else params_head_of(params),
                "result" in entry,
                "error" in entry,
            )
            pending = self._take(kind, envelope, batch)
            if pending is not None:
                await pending
            if self._new_dynamic:
                await self._add_new_dynamic_handlers()
        batch.dispatched = True
        batch.send_if_complete()
