# The trace writer's per-entry work: its queue, and the events of a batch
# of messages, joined from pieces (docs/tracing.md).
#
# EntryQueue holds the entries (one read, one write, or one message each)
# from recorded to written; HopEntries puts a connection's reads and writes
# into it. entry_lines() lays a batch of entries out as one list of lines,
# each with its entry's head; join_events() then makes the events.
#
# The trace writer (acp_fast/_async/trace.py) decodes the heads of a batch's
# messages in one call and hands them here with each message's raw line and
# its entry's head (the encoded "ts", "wall" and ends). For each message this
# appends the pieces of its event to one list, to be joined once:
#
#   request       {"type":"request","ts":..,"protocol":"acp","id":ID,
#                  "method":M[,"session":S],"params":P,"raw":LINE}
#   notification  the same with "type":"notification" and no "id"
#   response      {"type":"response","ts":..,"id":ID,"is_error":B,
#                  "payload":RESULT_OR_ERROR,"raw":LINE}
#
# Invariants:
#
# * Every piece is bytes taken as is: a decoded head's raw parts (id,
#   params, result, error) are the message's own JSON text, and the
#   constants and cached parts are valid JSON fragments. Nothing is
#   re-encoded here.
# * A message this cannot write alone (a successor or MCP envelope, whose
#   event names the inner message; anything neither a call nor a response)
#   gets one empty placeholder piece, and its index and the placeholder's
#   position are appended to ``odd`` as two ints, in order: the caller
#   writes those events its own way and puts them in place.
# * A line that starts with the bytes ``known_start`` of an earlier line of
#   the batch names the same session (``session_of`` decided it): a stream
#   of one session's updates is decoded for its session once per batch.
# * EntryQueue.put never blocks, and each of its counters has one writer
#   (the recording loop, the encoder under the writer's lock, or the writer
#   thread), so what is queued (enqueued minus written) needs no lock.
#
# This file is compiled by Cython (with _events_c.pxd) and is also the
# pure-Python fallback; it must never import cython.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._constants import FORM_LINES, FORM_ONE, FORM_READ, FORM_WRITTEN

_SUCCESSOR = "_proxy/successor"
_MCP_MESSAGE = "mcp/message"

_OPEN_REQUEST = b'{"type":"request","ts":'
_OPEN_NOTIFICATION = b'{"type":"notification","ts":'
_OPEN_RESPONSE = b'{"type":"response","ts":'
_PROTOCOL_ID = b',"protocol":"acp","id":'
_PROTOCOL = b',"protocol":"acp"'
_PARAMS = b',"params":'
_ID = b',"id":'
_IS_ERROR = b',"is_error":true,"payload":'
_IS_RESULT = b',"is_error":false,"payload":'
_RAW = b',"raw":'
_CLOSE = b"}\n"
_NULL = b"null"
_SESSION_ID = b'"sessionId"'

_WALL = b',"wall":'


def entry_lines(
    items: list[Any],
    ts_list: list[bytes],
    wall_list: list[bytes],
    heads: list[bytes],
    lines: list[Any],
    bounds: list[int],
) -> bool:
    """Each entry's messages as lines, with their entry's head.

    ``items`` are the writer's entries: (clock, ends, data, form, ...), with
    ``ends[0]`` the encoded ends that follow "wall"; ``ts_list[i]`` and
    ``wall_list[i]`` are entry i's times, encoded. Appends each message's
    line to ``lines`` and its entry's head (``ts``, ``wall``, ends) to
    ``heads``, the same object for all messages of an entry, and where each
    entry's lines end to ``bounds``. False at the first entry of another
    form (an oversized line, which is not a message): the caller then
    encodes entry by entry.
    """
    read = FORM_READ
    written = FORM_WRITTEN
    one = FORM_ONE
    joined_lines = FORM_LINES
    count = len(items)
    for index in range(count):
        item = items[index]
        form = item[3]
        data = item[2]
        head = b"".join((ts_list[index], _WALL, wall_list[index], item[1][0]))
        if form == read:
            payload = data
        elif form == written:
            payload = data.split(b"\n")
            if not payload[-1]:
                payload.pop()
        elif form == one:
            lines.append(data)
            heads.append(head)
            bounds.append(len(lines))
            continue
        elif form == joined_lines:
            payload = data.split(b"\n")
        else:
            return False
        if len(payload) == 1:
            lines.append(payload[0])
            heads.append(head)
        else:
            lines.extend(payload)
            heads.extend([head] * len(payload))
        bounds.append(len(lines))
    return True


# session_of(line, params) -> (the ',"session":..,"params":' part or None,
# the start of lines known to name that session, or None).
SessionOf = Callable[[bytes, Any], "tuple[bytes | None, bytes | None]"]


def join_events(
    messages: list[Any],
    lines: list[bytes],
    heads: list[bytes],
    method_parts: dict[str, bytes],
    method_part: Callable[[str], bytes],
    session_of: SessionOf | None,
    odd: list[int],
) -> list[Any]:
    """The pieces of the batch's events, in order (see the module comment).

    ``messages[i]`` is the decoded head of ``lines[i]`` (attributes ``id``,
    ``method``, ``params``, ``result``, ``error``; raw parts are bytes-like
    and empty when absent), ``heads[i]`` its entry's head. ``method_parts``
    caches ``method_part``. ``session_of`` is None when no line of the batch
    holds a ``"sessionId"``.
    """
    out: list[Any] = []
    known_start = b"\x00"  # no line starts with it
    known_session = b""
    # An entry's messages share its head: each kind's opening (type, the
    # head, what follows it) is joined once per entry, when first needed.
    last_head = b""
    shared = False
    open_request = open_notification = open_response = b""
    count = len(lines)
    for index in range(count):
        message = messages[index]
        line = lines[index]
        head = heads[index]
        if head is not last_head:
            last_head = head
            open_request = open_notification = open_response = b""
            # Joined openings pay off only for an entry of several messages.
            shared = index + 1 < count and heads[index + 1] is head
        method = message.method
        if method is not None:
            if method == _SUCCESSOR or method == _MCP_MESSAGE:
                odd.append(index)
                odd.append(len(out))
                out.append(b"")
                continue
            name = method_parts.get(method)
            if name is None:
                name = method_part(method)
            params = message.params
            if not params:
                params = _NULL
            session = _PARAMS
            if session_of is not None:
                if line.startswith(known_start):
                    session = known_session
                elif line.find(_SESSION_ID) >= 0:
                    found, start = session_of(line, params)
                    if found is not None:
                        session = found
                        if start is not None:
                            known_start = start
                            known_session = found
            rid = message.id
            if rid:
                if not shared:
                    out.extend((_OPEN_REQUEST, head, _PROTOCOL_ID))
                else:
                    if not open_request:
                        open_request = _OPEN_REQUEST + head + _PROTOCOL_ID
                    out.append(open_request)
                out.append(rid)
            elif not shared:
                out.extend((_OPEN_NOTIFICATION, head, _PROTOCOL))
            else:
                if not open_notification:
                    open_notification = _OPEN_NOTIFICATION + head + _PROTOCOL
                out.append(open_notification)
            out.extend((name, session, params, _RAW, line, _CLOSE))
            continue
        rid = message.id
        if rid:
            # An error wins over a result (an answer has one of the two).
            payload = message.error
            is_error = _IS_ERROR
            if not payload:
                payload = message.result
                is_error = _IS_RESULT
            if payload:
                if not shared:
                    out.extend((_OPEN_RESPONSE, head, _ID))
                else:
                    if not open_response:
                        open_response = _OPEN_RESPONSE + head + _ID
                    out.append(open_response)
                out.extend((rid, is_error, payload, _RAW, line, _CLOSE))
                continue
        odd.append(index)
        odd.append(len(out))
        out.append(b"")
    return out


class EntryQueue:
    """A trace writer's entries, from recorded to written.

    ``put`` is the per-read and per-write path of a recorded connection: it
    appends ``(clock(), ends, data, form, oversized, size)`` to ``pending``
    and never blocks. Beyond ``max_entries`` entries or ``max_bytes`` bytes
    recorded and not yet written, it drops the entry and adds its messages
    to ``dropped``. Once ``inline_entries`` entries or ``inline_bytes`` bytes
    wait to be encoded it calls ``encode(False)``; while ``sync`` is set (a
    callback writer, or a closed one) it hands each entry to ``record_now``
    instead of queueing it.

    Each counter has one writer, so the queued amounts (enqueued minus
    written) need no lock: ``enqueued_*`` and ``dropped`` are written by
    ``put`` (the recording loop), ``encoded_bytes`` by whoever encodes
    (under the writer's lock), and ``written_*`` by the writer thread.
    """

    __slots__ = (
        "clock",
        "count_messages",
        "dropped",
        "encode",
        "encoded_bytes",
        "enqueued_bytes",
        "enqueued_entries",
        "inline_bytes",
        "inline_entries",
        "max_bytes",
        "max_entries",
        "pending",
        "record_now",
        "sync",
        "written_bytes",
        "written_entries",
    )

    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        inline_entries: int,
        inline_bytes: int,
        clock: Callable[[], float],
        encode: Callable[[bool], None],
        record_now: Callable[[Any, Any, int, int], None],
        count_messages: Callable[[Any, int], int],
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.inline_entries = inline_entries
        self.inline_bytes = inline_bytes
        self.clock = clock
        self.encode = encode
        self.record_now = record_now
        self.count_messages = count_messages
        self.sync = False
        self.pending: list[Any] = []
        self.dropped = 0
        self.enqueued_entries = 0
        self.enqueued_bytes = 0
        self.encoded_bytes = 0
        self.written_entries = 0
        self.written_bytes = 0

    def put(self, ends: Any, data: Any, form: int, oversized: int, size: int) -> None:
        """Queue one entry (or hand it to ``record_now``); never blocks."""
        if self.sync:
            self.record_now(ends, data, form, oversized)
            return
        if (
            self.enqueued_entries - self.written_entries >= self.max_entries
            or self.enqueued_bytes - self.written_bytes > self.max_bytes
        ):
            self.dropped += self.count_messages(data, form)
            return
        self.enqueued_entries += 1
        self.enqueued_bytes += size
        pending = self.pending
        pending.append((self.clock(), ends, data, form, oversized, size))
        if (
            len(pending) >= self.inline_entries
            or self.enqueued_bytes - self.encoded_bytes >= self.inline_bytes
        ):
            self.encode(False)


class HopEntries:
    """One recorded connection's reads and writes, put into an ``EntryQueue``.

    ``ends_in`` and ``ends_out`` are the entry ends (see ``entry_lines``) of
    the two directions.
    """

    __slots__ = ("ends_in", "ends_out", "queue")

    def __init__(self, queue: EntryQueue, ends_in: Any, ends_out: Any) -> None:
        self.queue = queue
        self.ends_in = ends_in
        self.ends_out = ends_out

    def record_in(self, lines: list[Any], size: int) -> None:
        """A read: its lines (bytes, or the framer's oversized lines)."""
        self.queue.put(self.ends_in, lines, FORM_READ, 0, size)

    def record_out(self, data: bytes) -> None:
        """A write: its bytes, one or more newline-ended messages."""
        self.queue.put(self.ends_out, data, FORM_WRITTEN, 0, len(data))
