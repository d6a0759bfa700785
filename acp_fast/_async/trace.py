"""Wire traces: every message of one or more connections, as NDJSON events.

A ``TraceWriter`` takes raw messages from the connections it watches
(through a ``HopRecorder``, an observer of one connection, or ``record``
called directly) and turns each into one event, the format of
docs/tracing.md. The connection's loop only appends the bytes and a
timestamp to a bounded queue; a writer thread builds the events and writes
them, so a slow disk never holds the connection up. When the queue is full
the message is dropped and counted, and the summary line at the end says how
many were.

With a callback instead of a path, each event is built at once and passed
to the callback as a dict, in the connection's loop.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from .observe import INCOMING, Observer

__all__ = ("HopRecorder", "TraceSink", "TraceWriter", "build_event", "encode_event")

log = logging.getLogger("acp_fast")

TraceSink = str | os.PathLike[str] | Callable[[dict[str, Any]], object]

_SUCCESSOR = "_proxy/successor"
_MCP_MESSAGE = "mcp/message"

# Queue limits: beyond either, messages are dropped (and counted).
MAX_QUEUED_EVENTS = 100_000
MAX_QUEUED_BYTES = 64 * 1024 * 1024
# How often the writer thread looks at the queue when nobody wakes it.
_POLL_SECONDS = 0.05
_clock = time.perf_counter
# Events encoded and written at a time: a write releases the GIL, so the
# connection's loop gets its turn between batches.
_BATCH_EVENTS = 1024


class _Message(msgspec.Struct):
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
_decode_params_list = msgspec.json.Decoder(list[_Params]).decode


def _sessions_of(messages: list[_Message], lines: list[bytes]) -> list[bytes | None]:
    """The session part of each message's event, the params of all that may
    name one decoded in one call (None: left to ``_encode_common``)."""
    sessions: list[bytes | None] = [b""] * len(messages)
    wanted = [
        i
        for i, line in enumerate(lines)
        if b'"sessionId"' in line and messages[i].method is not None and messages[i].params
    ]
    if not wanted:
        return sessions
    try:
        heads = _decode_params_list(b"[" + b",".join([messages[i].params for i in wanted]) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        heads = None
    if heads is None or len(heads) != len(wanted):
        for i in wanted:
            sessions[i] = None
        return sessions
    for i, head in zip(wanted, heads, strict=True):
        found = head.sessionId
        if type(found) is str:
            sessions[i] = b',"session":' + _encode(found)
    return sessions


def encode_batch(items: list[tuple[Any, ...]], start: float, start_wall: float) -> bytes:
    """Queued messages (clock, direction, hop, sender, receiver, data,
    oversized) as event lines, each with its newline.

    The whole batch is decoded in one call and its timestamps encoded in two,
    so each event costs little more than one bytes formatting; a batch with
    anything unusual in it (an oversized or invalid line, a JSON-RPC batch)
    is encoded event by event.
    """
    lines = [data[:-1] if data[-1:] == b"\n" else data for _, _, _, _, _, data, _ in items]
    stamps = [clock - start for clock, *_ in items]
    try:
        messages = _decode_messages(b"[" + b",".join(lines) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        messages = None
    out: list[bytes] = []
    if messages is not None and len(messages) == len(items):
        # Equal counts: every line was exactly one JSON object of its own.
        ts_list = _encode(stamps)[1:-1].split(b",")
        wall_list = _encode([start_wall + ts for ts in stamps])[1:-1].split(b",")
        sessions = _sessions_of(messages, lines)
        for item, line, message, ts, wall, session in zip(
            items, lines, messages, ts_list, wall_list, sessions, strict=True
        ):
            _, direction, hop, sender, receiver, data, oversized = item
            encoded = None
            if oversized is None:
                ends = _ends_of(direction, hop, sender, receiver)
                encoded = _encode_common(ts, wall, ends, line, message, session)
            if encoded is None:
                encoded = _encode_one(item, start, start_wall)
            if encoded is not None:
                out.append(encoded)
    else:
        for item in items:
            encoded = _encode_one(item, start, start_wall)
            if encoded is not None:
                out.append(encoded)
    if not out:
        return b""
    out.append(b"")
    return b"\n".join(out)


def _encode_one(item: tuple[Any, ...], start: float, start_wall: float) -> bytes | None:
    clock, direction, hop, sender, receiver, data, oversized = item
    ts = clock - start
    try:
        return encode_event(ts, start_wall + ts, direction, hop, sender, receiver, data, oversized)
    except Exception:  # never lose the rest of the trace
        log.exception("trace event not written")
        return None


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

    ``record`` is what the connections call; ``close`` writes what is queued
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
        self._max_events = max_events
        self._max_bytes = max_bytes
        self.recorded = 0
        self.dropped = 0
        self._closed = False
        # Producer-only and writer-only counters: queued = enqueued - written.
        self._enqueued_bytes = 0
        self._written_bytes = 0
        self._queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self._callback: Callable[[dict[str, Any]], object] | None = None
        self._thread: threading.Thread | None = None
        # True when record() must not queue: a callback, or closed.
        self._sync = callable(sink)
        if callable(sink):
            self._callback = sink
            self._file = None
        else:
            # Truncated at start, like the Rust conductor's --trace.
            self._file = open(sink, "wb")
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
        # The per-message path of a recorded connection: kept to a few steps.
        if self._sync:
            self._record_now(direction, hop, sender, receiver, data, oversized)
            return
        queue = self._queue
        if (
            len(queue) >= self._max_events
            or self._enqueued_bytes - self._written_bytes > self._max_bytes
        ):
            self.dropped += 1
            return
        self._enqueued_bytes += len(data)
        queue.append((_clock(), direction, hop, sender, receiver, data, oversized))

    def _record_now(
        self,
        direction: str,
        hop: str,
        sender: str,
        receiver: str,
        data: bytes,
        oversized: int | None,
    ) -> None:
        # A callback, or a closed writer (which ignores what comes late).
        callback = self._callback
        if self._closed or callback is None:
            return
        now = _clock() - self._start
        self.recorded += 1
        event = build_event(
            now, self._start_wall + now, direction, hop, sender, receiver, data, oversized
        )
        try:
            callback(msgspec.json.decode(_encode(event)))
        except Exception:
            log.exception("trace callback failed")

    def _write_loop(self) -> None:
        queue = self._queue
        assert self._file is not None
        write = self._file.write
        popleft = queue.popleft
        start = self._start
        wall = self._start_wall
        while True:
            # Woken only to stop: between polls the loop's appends pile up
            # and are encoded as whole batches (docs/tracing.md).
            self._wake.wait(_POLL_SECONDS)
            stopping = self._wake.is_set()
            while queue:
                count = min(len(queue), _BATCH_EVENTS)
                items = [popleft() for _ in range(count)]
                self.recorded += count  # the writer thread's own counter
                size = 0
                for item in items:
                    size += len(item[5])
                try:
                    write(encode_batch(items, start, wall))
                except Exception:  # never lose the rest of the trace
                    log.exception("trace events not written")
                self._written_bytes += size
            self._file.flush()
            if stopping:
                return

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
        self._sync = True
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
        self._file.write(_encode(summary) + b"\n")
        self._file.close()


class HopRecorder(Observer):
    """Records one connection's messages into a ``TraceWriter``.

    ``local`` and ``peer`` name the two ends (``Client``, ``Proxy(0)``,
    ``Agent``, ``Conductor``); ``hop`` names the connection.
    """

    def __init__(
        self, writer: TraceWriter, hop: str, local: str, peer: str, *, owns_writer: bool = False
    ) -> None:
        self._record = writer.record
        self._writer = writer
        self._hop = hop
        self._local = local
        self._peer = peer
        self._owns_writer = owns_writer

    def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
        if direction is INCOMING:
            self._record(direction, self._hop, self._peer, self._local, data, oversized)
        else:
            self._record(direction, self._hop, self._local, self._peer, data, oversized)

    def on_close(self) -> None:
        if self._owns_writer:
            self._writer.close()
