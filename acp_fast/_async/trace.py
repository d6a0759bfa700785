"""Wire traces: every message of one or more connections, as NDJSON events.

A ``TraceWriter`` takes raw messages from the connections it watches
(through a ``HopRecorder``, which a connection hands each read and each
write whole, or ``record`` called with one message) and turns each message
into one event, the format of docs/tracing.md. The connection's loop
appends the read's lines or the written bytes and one timestamp to a
bounded list, and every ``_INLINE_ENTRIES`` entries it encodes the list as
one batch; a writer thread writes the encoded batches (and encodes what is
left when the connection goes quiet), so a slow disk never holds the
connection up. When the queue is full the read or write is not recorded
and its messages are counted, and the summary line at the end says how
many were dropped.

With a callback instead of a path, each event is built at once and passed
to the callback as a dict, in the connection's loop.
"""

from __future__ import annotations

import bisect
import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import msgspec

from .._core import FORM_LINES as LINES
from .._core import FORM_ONE as ONE
from .._core import FORM_OVERSIZED as OVERSIZED
from .._core import FORM_READ as READ
from .._core import FORM_WRITTEN as WRITTEN
from .._core import EntryQueue, HopEntries, entry_lines, join_events
from .._io.append_file import AppendFile
from .observe import INCOMING, OUTGOING, Observer, WireRecorder

__all__ = ("HopRecorder", "TraceSink", "TraceWriter", "build_event", "encode_event")

log = logging.getLogger("acp_fast")

TraceSink = str | os.PathLike[str] | Callable[[dict[str, Any]], object]

_SUCCESSOR = "_proxy/successor"
_MCP_MESSAGE = "mcp/message"

# Queue limits: beyond either, messages are dropped (and counted). They
# count what is recorded and not yet written, encoded or not.
MAX_QUEUED_EVENTS = 100_000
MAX_QUEUED_BYTES = 64 * 1024 * 1024
# How often the writer thread looks at the queue when nobody wakes it.
_POLL_SECONDS = 0.05
_clock = time.perf_counter
# The recording loop encodes its entries itself once this many (or this
# many bytes) are pending. Encoding in the writer thread beside a busy loop
# costs more than it saves: the two threads then hand the interpreter lock
# to and fro at every system call of the loop (docs/tracing.md).
_INLINE_ENTRIES = 256
_INLINE_BYTES = 128 * 1024
# The writer thread encodes pending entries once the loop has added none
# for a poll, or when the oldest is this old.
_LEFTOVER_SECONDS = 0.2
# Entries the writer thread encodes at a time.
_BATCH_ENTRIES = 2048


class _Message(msgspec.Struct, gc=False):
    """The head of a JSON-RPC message; the payloads stay raw bytes."""

    id: msgspec.Raw = msgspec.Raw(b"")
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw(b"")
    result: msgspec.Raw = msgspec.Raw(b"")
    error: msgspec.Raw = msgspec.Raw(b"")


class _Params(msgspec.Struct):
    sessionId: Any = None
    method: Any = None
    params: msgspec.Raw = msgspec.Raw(b"")


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_params = msgspec.json.Decoder(_Params).decode
_encode = msgspec.json.Encoder().encode
_NULL = msgspec.Raw(b"null")


def _session_of(params: msgspec.Raw) -> tuple[str | None, _Params | None]:
    if not params or bytes(memoryview(params)[:1]) != b"{":
        return None, None
    try:
        head = _decode_params(params)
    except msgspec.DecodeError:
        return None, None
    session = head.sessionId if type(head.sessionId) is str else None
    return session, head


def build_event(
    ts: float,
    wall: float,
    direction: str,
    hop: str,
    sender: str,
    receiver: str,
    data: bytes,
    oversized: int | None = None,
) -> dict[str, Any]:
    """One trace event (docs/tracing.md) for one message; values may be raw JSON."""
    event: dict[str, Any] = {
        "type": "invalid",
        "ts": ts,
        "wall": wall,
        "dir": direction,
        "hop": hop,
        "from": sender,
        "to": receiver,
    }
    line = data.rstrip(b"\r\n")
    if oversized is not None:
        event["oversized"] = oversized
        event["text"] = line.decode("utf-8", "replace")
        return event
    stripped = line.lstrip()
    if stripped[:1] == b"[":
        try:
            msgspec.json.decode(line)
        except msgspec.DecodeError:
            pass
        else:
            event["type"] = "batch"
            event["raw"] = msgspec.Raw(line)
            return event
    try:
        message = _decode_message(line)
    except (msgspec.DecodeError, RecursionError):
        event["text"] = line.decode("utf-8", "replace")
        return event
    raw = msgspec.Raw(line)
    if message.method is not None:
        method = message.method
        params = message.params
        session, head = _session_of(params)
        protocol = "acp"
        if method == _SUCCESSOR and head is not None and type(head.method) is str:
            # The logical message inside a proxy's envelope (as the Rust
            # viewer shows it); the envelope stays in "raw".
            event["successor"] = True
            method, params = head.method, head.params
            session, head = _session_of(params)
        if method == _MCP_MESSAGE and head is not None and type(head.method) is str:
            protocol = "mcp"
            method = head.method
            params = head.params
        event["type"] = "request" if message.id else "notification"
        event["protocol"] = protocol
        if message.id:
            event["id"] = message.id
        event["method"] = method
        if session is not None:
            event["session"] = session
        event["params"] = params or _NULL
        event["raw"] = raw
        return event
    if message.id and (message.result or message.error):
        event["type"] = "response"
        event["id"] = message.id
        event["is_error"] = bool(message.error)
        event["payload"] = message.error or message.result
        event["raw"] = raw
        return event
    event["raw"] = raw
    return event


# The parts of an event line that repeat, encoded once.
_ends: dict[tuple[str, str, str, str], bytes] = {}
_methods: dict[str, bytes] = {}
_MAX_CACHED_METHODS = 4096


_entries: dict[tuple[str, str, str, str], tuple[bytes, str, str, str, str]] = {}


def _entry_ends(
    direction: str, hop: str, sender: str, receiver: str
) -> tuple[bytes, str, str, str, str]:
    """The ``ends`` of a queued entry (see ``Item``)."""
    key = (direction, hop, sender, receiver)
    ends = _entries.get(key)
    if ends is None:
        ends = (
            b"," + _ends_of(direction, hop, sender, receiver),
            direction,
            hop,
            sender,
            receiver,
        )
        _entries[key] = ends
    return ends


def _ends_of(direction: str, hop: str, sender: str, receiver: str) -> bytes:
    key = (direction, hop, sender, receiver)
    ends = _ends.get(key)
    if ends is None:
        ends = b'"dir":%s,"hop":%s,"from":%s,"to":%s' % (
            _encode(direction),
            _encode(hop),
            _encode(sender),
            _encode(receiver),
        )
        _ends[key] = ends
    return ends


def _encode_common(
    ts: bytes,
    wall: bytes,
    ends: bytes,
    line: bytes,
    message: _Message,
    session: bytes | None = None,
) -> bytes | None:
    """A plain request, notification or response as an event line, formatted
    around the message's own raw parts; None for the rest. ``session`` is the
    session part when already known."""
    method = message.method
    if method is not None:
        if method == _SUCCESSOR or method == _MCP_MESSAGE:
            return None
        name = _methods.get(method)
        if name is None:
            name = _encode(method)
            if len(_methods) < _MAX_CACHED_METHODS:
                _methods[method] = name
        params = message.params or _NULL
        if session is None:
            session = b""
            if b'"sessionId"' in line:
                found, _ = _session_of(params)
                if found is not None:
                    session = b',"session":' + _encode(found)
        if message.id:
            return _REQUEST % (ts, wall, ends, message.id, name, session, params, line)
        return _NOTIFICATION % (ts, wall, ends, name, session, params, line)
    if message.id:
        if message.error:
            return _ERROR % (ts, wall, ends, message.id, message.error, line)
        if message.result:
            return _RESULT % (ts, wall, ends, message.id, message.result, line)
    return None


_REQUEST = (
    b'{"type":"request","ts":%s,"wall":%s,%s,"protocol":"acp","id":%s,'
    b'"method":%s%s,"params":%s,"raw":%s}'
)
_NOTIFICATION = (
    b'{"type":"notification","ts":%s,"wall":%s,%s,"protocol":"acp",'
    b'"method":%s%s,"params":%s,"raw":%s}'
)
_ERROR = b'{"type":"response","ts":%s,"wall":%s,%s,"id":%s,"is_error":true,"payload":%s,"raw":%s}'
_RESULT = b'{"type":"response","ts":%s,"wall":%s,%s,"id":%s,"is_error":false,"payload":%s,"raw":%s}'
_decode_messages = msgspec.json.Decoder(list[_Message]).decode

# Cached pieces of the events: ',"method":NAME' and ',"session":ID,"params":'.
_method_parts: dict[str, bytes] = {}
_session_params: dict[str, bytes] = {}
_MAX_CACHED_SESSIONS = 4096


class _SessionOf(msgspec.Struct):
    sessionId: Any = None


_decode_session = msgspec.json.Decoder(_SessionOf).decode


def _session_params_part(session: str) -> bytes:
    part = b',"session":' + _encode(session) + _PARAMS
    if len(_session_params) < _MAX_CACHED_SESSIONS:
        _session_params[session] = part
    return part


def _method_part(method: str) -> bytes:
    part = b',"method":' + _encode(method)
    if len(_method_parts) < _MAX_CACHED_METHODS:
        _method_parts[method] = part
    return part


# An entry of the writer's queue: one read, one write, or one message given
# to ``TraceWriter.record``: (clock, ends, data, form, oversized size,
# bytes). ``ends`` is a value of ``_entries``: the encoded
# direction, hop and ends (after a comma, as they follow "wall"), then the
# four as given. Every message of an entry has the entry's time.
Item = tuple[float, tuple[bytes, str, str, str, str], Any, int, int, int]
# The forms of an entry's data: LINES, WRITTEN, ONE, OVERSIZED and READ
# (acp_fast/_core/_constants.py).


def _lines_of(data: Any, form: int) -> list[Any]:
    if form == READ:
        return cast("list[Any]", data)
    if form == LINES:
        return cast("list[Any]", data.split(b"\n"))
    if form == WRITTEN:
        lines: list[Any] = data.split(b"\n")
        if not lines[-1]:
            lines.pop()
        return lines
    return [data]


def _count_messages(data: Any, form: int) -> int:
    """How many messages an entry's data holds (see ``Item``)."""
    if form == READ:
        return len(data)
    if form == WRITTEN:
        return int(data.count(b"\n")) or 1
    if form == LINES:
        return int(data.count(b"\n")) + 1
    return 1


def encode_batch(items: list[Item], start: float, start_wall: float) -> bytes:
    """Queued entries as event lines, each with its newline."""
    return _encode_batch(items, start, start_wall)[0]


# Pieces this module looks for or adds (the events' own: _core/_events_py.py).
_SESSION_ID = b'"sessionId"'
_PARAMS = b',"params":'


def _encode_batch(items: list[Item], start: float, start_wall: float) -> tuple[bytes, int]:
    """``encode_batch``, and how many events it holds.

    All the messages of the batch are decoded in one call and the entries'
    timestamps encoded in two; each entry's time and ends are joined once,
    and each message adds a few pieces (constants, its own raw parts) to one
    list that is joined once for the whole batch. A batch with anything
    unusual in it (an oversized or invalid line, a JSON-RPC batch, a line
    that is two objects) is encoded entry by entry, and such an entry
    message by message.
    """
    stamps = [item[0] - start for item in items]
    ts_list = _encode(stamps)[1:-1].split(b",")
    wall_list = _encode([start_wall + ts for ts in stamps])[1:-1].split(b",")
    heads: list[bytes] = []
    lines: list[bytes] = []
    bounds: list[int] = []  # where each entry's lines end in ``lines``
    if not entry_lines(items, ts_list, wall_list, heads, lines, bounds):
        lines = []  # an oversized line, not a message: the slow path
    joined = b""
    try:
        # (An oversized line in a read is not bytes: TypeError.)
        joined = b"[" + b",".join(lines) + b"]" if lines else b""
        messages = _decode_messages(joined) if lines else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, TypeError):
        messages = None
    if messages is None or len(messages) != len(lines):
        # Equal counts: every line was exactly one JSON object of its own.
        if len(items) == 1:
            encoded = _encode_entry(items[0], stamps[0], start_wall)
            return encoded, encoded.count(b"\n")
        parts = [_encode_batch([item], start, start_wall) for item in items]
        return b"".join([part[0] for part in parts]), sum([part[1] for part in parts])
    odd: list[int] = []
    # Without the key anywhere in the batch no line names a session.
    out = join_events(
        messages,
        lines,
        heads,
        _method_parts,
        _method_part,
        _session_of_line if _SESSION_ID in joined else None,
        odd,
    )
    count = len(lines)
    for at in range(0, len(odd), 2):
        # The messages join_events leaves to us (successor and MCP
        # envelopes, anything neither a call nor a response): by message.
        index = odd[at]
        owner = bisect.bisect_right(bounds, index)
        event = _encode_line(items[owner], stamps[owner], start_wall, lines[index])
        if not event:
            count -= 1
        out[odd[at + 1]] = event
    return b"".join(out), count


_PARAMS_SESSION = b'"params":{"sessionId":"'


def _session_of_line(line: bytes, params: Any) -> tuple[bytes | None, bytes | None]:
    """For join_events: the session part of a line whose params may name a
    session, and the start of the lines known to name the same one."""
    try:
        found = _decode_session(params).sessionId
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None, None
    if type(found) is not str:
        return None, None
    return _session_params.get(found) or _session_params_part(found), _start_naming(line, found)


def _start_naming(line: bytes, session: str) -> bytes | None:
    """The start of ``line`` up to the end of its params' ``sessionId``
    value, when that start alone decides it: any line (of valid JSON) that
    begins with these bytes has that session. None when it cannot be told
    without decoding (the marker not at the top level, escapes)."""
    at = line.find(_PARAMS_SESSION)
    if at < 1 or line[0] != 0x7B:  # b"{"
        return None
    before = line[:at]
    # Only the line's own "{" before it: the marker is a member of the
    # top-level object (a bracket in a string only makes us give up).
    if before.count(b"{") != 1 or b"[" in before:
        return None
    value_start = at + len(_PARAMS_SESSION)
    value_end = line.find(b'"', value_start)
    if value_end < 0 or line[value_start:value_end] != session.encode():
        return None  # escaped, or not what was decoded
    return line[: value_end + 1]


def _encode_entry(item: Item, ts: float, start_wall: float) -> bytes:
    """One entry's events, message by message (each with its newline)."""
    return b"".join(
        [_encode_line(item, ts, start_wall, line) for line in _lines_of(item[2], item[3])]
    )


def _encode_line(item: Item, ts: float, start_wall: float, line: Any) -> bytes:
    """One message of an entry through ``encode_event``, with its newline
    (b"" if it could not be encoded)."""
    _, direction, hop, sender, receiver = item[1]
    oversized = item[4] if item[3] == OVERSIZED else None
    if type(line) is not bytes:  # the core's OversizedLine
        line, oversized = bytes(line.head), int(line.size)
    try:
        event = encode_event(ts, start_wall + ts, direction, hop, sender, receiver, line, oversized)
    except Exception:  # never lose the rest of the trace
        log.exception("trace event not written")
        return b""
    return event + b"\n"


def encode_event(
    ts: float,
    wall: float,
    direction: str,
    hop: str,
    sender: str,
    receiver: str,
    data: bytes,
    oversized: int | None = None,
) -> bytes:
    """``build_event`` encoded as one JSON line (without its newline).

    The common messages (a plain request, notification or response) are
    written by formatting bytes around the message's own raw parts, which
    costs a fraction of building and encoding the dict; the rest take the
    general path.
    """
    if oversized is None:
        line = data[:-1] if data[-1:] == b"\n" else data
        try:
            message = _decode_message(line)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            message = None
        if message is not None:
            encoded = _encode_common(
                _encode(ts),
                _encode(wall),
                _ends_of(direction, hop, sender, receiver),
                line,
                message,
            )
            if encoded is not None:
                return encoded
    return _encode(build_event(ts, wall, direction, hop, sender, receiver, data, oversized))


class TraceWriter:
    """Records messages to an NDJSON file (or hands events to a callback).

    ``record`` takes one message; the connections' recorders (``HopRecorder``)
    hand over a read or a write at a time. ``close`` writes what is queued
    and the summary line. One writer may serve many connections (the
    conductor's hops): each names its ``hop`` and the two ends.
    """

    def __init__(
        self,
        sink: TraceSink,
        *,
        max_events: int = MAX_QUEUED_EVENTS,
        max_bytes: int = MAX_QUEUED_BYTES,
    ) -> None:
        self._start = _clock()
        self._start_wall = time.time()
        self.recorded = 0
        self._closed = False
        # The entries (reads, writes, messages given to record), bounded in
        # number and bytes from recorded to written; its pending list is
        # appended to by the recording loop and taken from the front under
        # _lock. Encoded batches not yet written are appended under _lock,
        # so in the order of their entries: (lines, entries, bytes).
        self._queue = EntryQueue(
            max_events,
            max_bytes,
            _INLINE_ENTRIES,
            _INLINE_BYTES,
            _clock,
            self._encode_pending,
            self._record_now,
            _count_messages,
        )
        self._pending: list[Item] = self._queue.pending
        self._encoded: collections.deque[tuple[bytes, int, int]] = collections.deque()
        self._lock = threading.Lock()
        self._callback: Callable[[dict[str, Any]], object] | None = None
        self._thread: threading.Thread | None = None
        # _put must not queue for a callback, nor once closed.
        self._queue.sync = callable(sink)
        if callable(sink):
            self._callback = sink
            self._file = None
        else:
            # Truncated at start, like the Rust conductor's --trace.
            self._file = AppendFile(sink)
            self._wake = threading.Event()
            self._thread = threading.Thread(
                target=self._write_loop, name="acp_fast trace writer", daemon=True
            )
            self._thread.start()

    def record(
        self,
        direction: str,
        hop: str,
        sender: str,
        receiver: str,
        data: bytes,
        oversized: int | None = None,
    ) -> None:
        """Take one message; never blocks (drops it when the queue is full)."""
        if type(data) is not bytes:  # a bytearray, a memoryview, a subclass
            data = bytes(data)
        ends = _entry_ends(direction, hop, sender, receiver)
        if oversized is not None:
            self._put(ends, bytes(data), OVERSIZED, oversized, len(data))
            return
        if data[-1:] == b"\n":
            data = data[:-1]
        self._put(ends, data, ONE, 0, len(data))

    @property
    def dropped(self) -> int:
        """Messages not recorded because the queue was full."""
        return int(self._queue.dropped)

    def _put(
        self,
        ends: tuple[bytes, str, str, str, str],
        data: Any,
        form: int,
        oversized: int,
        size: int,
    ) -> None:
        """Queue one entry (see ``Item``); never blocks. A connection's
        reads and writes take the same path in the core (``HopRecorder``)."""
        self._queue.put(ends, data, form, oversized, size)

    def _encode_pending(self, leftovers: bool) -> None:
        """Encode pending entries into batches for the writer thread.

        The recording loop (``leftovers`` false) encodes one batch of what
        is pending, unless the writer thread is encoding just then; the
        writer thread encodes what is pending when it starts, waiting for
        the lock.
        Entries are taken from the front of the list while the loop may
        append at its end: a slice and a deletion of the same length each
        hold the interpreter lock, so none is lost or taken twice.
        """
        lock = self._lock
        if not lock.acquire(leftovers):
            return
        try:
            pending = self._pending
            # The writer thread takes what is there now, in batches; the
            # loop, one batch.
            left = len(pending)
            while left:
                count = min(left, _BATCH_ENTRIES) if leftovers else left
                left -= count
                items = pending[:count]
                del pending[:count]
                size = 0
                for item in items:
                    size += item[5]
                try:
                    encoded, events = _encode_batch(items, self._start, self._start_wall)
                except Exception:  # never lose the rest of the trace
                    log.exception("trace events not written")
                    encoded, events = b"", 0
                self.recorded += events
                self._queue.encoded_bytes += size
                self._encoded.append((encoded, count, size))
                if not leftovers:
                    return
        finally:
            lock.release()

    def _record_now(
        self, ends: tuple[bytes, str, str, str, str], data: Any, form: int, oversized: int
    ) -> None:
        # A callback, or a closed writer (which ignores what comes late).
        callback = self._callback
        if self._closed or callback is None:
            return
        now = _clock() - self._start
        _, direction, hop, sender, receiver = ends
        for entry in _lines_of(data, form):
            line: bytes = entry
            size = oversized if form == OVERSIZED else None
            if type(entry) is not bytes:  # the core's OversizedLine
                line, size = bytes(entry.head), int(entry.size)
            self.recorded += 1
            try:
                event = build_event(
                    now, self._start_wall + now, direction, hop, sender, receiver, line, size
                )
                callback(msgspec.json.decode(_encode(event)))
            except Exception:  # never fail the connection that is recorded
                log.exception("trace callback failed")

    def _write_loop(self) -> None:
        seen = -1
        while True:
            # Woken only to stop: between polls the loop's batches pile up.
            self._wake.wait(_POLL_SECONDS)
            stopping = self._wake.is_set()
            try:
                self._write_pending(stopping, seen)
            except Exception:  # never stop writing the rest of the trace
                log.exception("trace events not written")
            seen = self._queue.enqueued_entries
            if stopping:
                return

    def _write_pending(self, stopping: bool, seen: int) -> None:
        """One poll of the writer thread: leftovers, then the encoded batches.
        ``seen`` is the loop's entry count at the end of the last poll."""
        # The loop may empty the list at any moment: look at a copy of its
        # first entry, never index the list itself.
        oldest = self._pending[:1]
        if oldest and (
            stopping
            or self._queue.enqueued_entries == seen
            or _clock() - oldest[0][0] > _LEFTOVER_SECONDS
        ):
            # Only entries the loop has stopped adding to, or old ones:
            # encoding beside a busy loop makes the two threads trade the
            # interpreter lock at each of the loop's system calls.
            self._encode_pending(True)
        encoded = self._encoded
        if not encoded:
            return
        # Everything at once: each write gives the interpreter lock away and
        # takes it back, which costs the loop a hand-over (docs/tracing.md).
        parts: list[bytes] = []
        entries = size = 0
        while encoded:
            lines, count, batch_size = encoded.popleft()
            parts.append(lines)
            entries += count
            size += batch_size
        try:
            assert self._file is not None
            self._file.write(parts)
        finally:
            # Written or not, these no longer count against the bounds.
            queue = self._queue
            queue.written_entries += entries
            queue.written_bytes += size

    def _summary(self) -> dict[str, Any]:
        now = _clock() - self._start
        return {
            "type": "summary",
            "ts": now,
            "wall": self._start_wall + now,
            "recorded": self.recorded,
            "dropped": self.dropped,
        }

    def close(self) -> None:
        """Write what is queued, then the summary line; later records are ignored."""
        if self._closed:
            return
        self._closed = True
        self._queue.sync = True
        if self._callback is not None:
            try:
                self._callback(self._summary())
            except Exception:
                log.exception("trace callback failed")
            return
        assert self._thread is not None and self._file is not None
        self._wake.set()
        self._thread.join()
        summary = self._summary()
        try:
            self._file.write([_encode(summary) + b"\n"])
        finally:
            self._file.close()


class HopRecorder(Observer, WireRecorder):
    """Records one connection's messages into a ``TraceWriter``.

    ``local`` and ``peer`` name the two ends (``Client``, ``Proxy(0)``,
    ``Agent``, ``Conductor``); ``hop`` names the connection. The connection
    hands it each read and each write whole (observe.py): one entry in the
    writer's queue per read or write, not per message.
    """

    def __init__(
        self, writer: TraceWriter, hop: str, local: str, peer: str, *, owns_writer: bool = False
    ) -> None:
        self._put = writer._queue.put
        self._writer = writer
        self._in = _entry_ends(INCOMING, hop, peer, local)
        self._out = _entry_ends(OUTGOING, hop, local, peer)
        self._owns_writer = owns_writer
        # The per-read and per-write calls go straight to the core.
        entries = HopEntries(writer._queue, self._in, self._out)
        self.record_in = entries.record_in  # type: ignore[method-assign]
        self.record_out = entries.record_out  # type: ignore[method-assign]

    def record_in(self, lines: list[Any], size: int) -> None:
        self._put(self._in, lines, READ, 0, size)

    def record_out(self, data: bytes) -> None:
        self._put(self._out, data, WRITTEN, 0, len(data))

    def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
        # Only for callers of their own: a connection uses record_in/out.
        if type(data) is not bytes:  # a bytearray, a memoryview, a subclass
            data = bytes(data)
        if direction is INCOMING:
            if oversized is not None:
                self._put(self._in, bytes(data), OVERSIZED, oversized, len(data))
            else:
                line = data[:-1] if data[-1:] == b"\n" else data
                self._put(self._in, line, ONE, 0, len(data))
        else:
            self._put(self._out, data, WRITTEN, 0, len(data))

    def on_close(self) -> None:
        if self._owns_writer:
            self._writer.close()
