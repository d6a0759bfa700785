"""Trace events joined from decoded heads (acp_fast/_core/_events_py.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.helpers import CoreImpl

HEAD = b'0.5,"wall":1.5,"direction":"out"'


class _Line(bytes):
    """A caller's own bytes type."""


@dataclass
class Head:
    """What the trace writer decodes of a message: raw parts, b"" when absent."""

    id: bytes = b""
    method: str | None = None
    params: bytes = b""
    result: bytes = b""
    error: bytes = b""


def _method_part(method: str) -> bytes:
    return b',"method":' + json.dumps(method).encode()


def _join(core: CoreImpl, heads: list[Head], lines: list[bytes], session_of: Any = None):
    odd: list[int] = []
    cache: dict[str, bytes] = {}
    pieces = core.join_events(
        heads, lines, [HEAD] * len(lines), cache, _method_part, session_of, odd
    )
    return pieces, odd, cache


def _events(pieces: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in b"".join(pieces).splitlines()]


def test_requests_notifications_and_answers_become_events(core: CoreImpl):
    lines = [
        b'{"id":1,"method":"a/b","params":{"x":1}}',
        b'{"method":"n"}',
        b'{"id":"r","result":{"ok":true}}',
        b'{"id":2,"error":{"code":-32800}}',
    ]
    heads = [
        Head(id=b"1", method="a/b", params=b'{"x":1}'),
        Head(method="n"),
        Head(id=b'"r"', result=b'{"ok":true}'),
        Head(id=b"2", error=b'{"code":-32800}'),
    ]
    pieces, odd, cache = _join(core, heads, lines)
    assert odd == []
    common = {"ts": 0.5, "wall": 1.5, "direction": "out"}
    assert _events(pieces) == [
        {"type": "request", **common, "protocol": "acp", "id": 1, "method": "a/b",
         "params": {"x": 1}, "raw": json.loads(lines[0])},
        {"type": "notification", **common, "protocol": "acp", "method": "n",
         "params": None, "raw": json.loads(lines[1])},
        {"type": "response", **common, "id": "r", "is_error": False,
         "payload": {"ok": True}, "raw": json.loads(lines[2])},
        {"type": "response", **common, "id": 2, "is_error": True,
         "payload": {"code": -32800}, "raw": json.loads(lines[3])},
    ]  # fmt: skip
    # The method's part comes from the cache the caller keeps; it is not
    # filled here (method_part does that, with its own bound).
    assert cache == {}


def test_envelopes_and_odd_messages_are_left_to_the_caller(core: CoreImpl):
    lines = [
        b'{"method":"_proxy/successor","params":{}}',
        b'{"id":1,"result":{}}',
        b'{"method":"mcp/message","params":{}}',
        b'{"id":3}',
    ]
    heads = [
        Head(method="_proxy/successor", params=b"{}"),
        Head(id=b"1", result=b"{}"),
        Head(method="mcp/message", params=b"{}"),
        Head(id=b"3"),
    ]
    pieces, odd, _ = _join(core, heads, lines)
    # (message index, position of its placeholder) pairs, in order.
    assert odd[0::2] == [0, 2, 3]
    assert all(pieces[at] == b"" for at in odd[1::2])
    for index, at in zip(odd[0::2], odd[1::2], strict=True):
        pieces[at] = b'{"odd":%d}\n' % index
    events = _events(pieces)
    assert [e.get("odd") for e in events] == [0, None, 2, 3]
    assert events[1]["type"] == "response"


def test_a_session_is_asked_for_once_per_run_of_lines_that_start_alike(core: CoreImpl):
    start = b'{"method":"u","params":{"sessionId":"s"'
    lines = [start + b',"n":%d}}' % i for i in range(3)]
    lines.append(b'{"method":"u","params":{"sessionId":"t"}}')
    heads = [Head(method="u", params=line[len(b'{"method":"u","params":') : -1]) for line in lines]
    asked: list[bytes] = []

    def session_of(line: bytes, params: Any) -> tuple[bytes | None, bytes | None]:
        asked.append(line)
        session = json.loads(bytes(params))["sessionId"]
        part = b',"session":' + json.dumps(session).encode() + b',"params":'
        return part, (start if session == "s" else None)

    pieces, odd, _ = _join(core, heads, lines, session_of)
    assert odd == []
    assert asked == [lines[0], lines[3]]
    assert [e["session"] for e in _events(pieces)] == ["s", "s", "s", "t"]


def test_a_session_that_cannot_be_told_leaves_the_params_alone(core: CoreImpl):
    lines = [b'{"method":"u","params":{"sessionId":7}}']
    heads = [Head(method="u", params=b'{"sessionId":7}')]
    pieces, _, _ = _join(core, heads, lines, lambda line, params: (None, None))
    (event,) = _events(pieces)
    assert "session" not in event
    assert event["params"] == {"sessionId": 7}


def test_an_entry_of_one_message_and_one_of_many_give_the_same_events(core: CoreImpl):
    lines = [b'{"id":1,"method":"m"}', b'{"method":"n"}', b'{"id":1,"result":{}}']
    heads = [Head(id=b"1", method="m"), Head(method="n"), Head(id=b"1", result=b"{}")]
    # One head object per message (an entry each), then one shared by all.
    alone = [bytes(bytearray(HEAD)) for _ in lines]
    shared = [HEAD] * len(lines)
    joined = [
        b"".join(core.join_events(heads, lines, entry_heads, {}, _method_part, None, []))
        for entry_heads in (alone, shared)
    ]
    assert joined[0] == joined[1]
    assert len(joined[0].splitlines()) == 3


def test_lines_of_any_bytes_like_type_are_joined(core: CoreImpl):
    start = b'{"method":"u","params":{"sessionId":"s"'
    lines = [bytearray(start + b',"n":1}}'), _Line(start + b',"n":2}}')]
    heads = [Head(method="u", params=b'{"sessionId":"s"}')] * 2

    def session_of(line: Any, params: Any) -> tuple[bytes | None, bytes | None]:
        return b',"session":"s","params":', bytes(line)[: len(start)]

    pieces, odd, _ = _join(core, heads, lines, session_of)
    assert odd == []
    assert [e["raw"]["params"]["n"] for e in _events(pieces)] == [1, 2]


def test_entries_are_laid_out_as_lines_each_with_its_entry_head(core: CoreImpl):
    from acp_fast._core import FORM_LINES, FORM_ONE, FORM_OVERSIZED, FORM_READ, FORM_WRITTEN

    a, b, c = b'{"id":1}', b'{"id":2}', b'{"id":3}'
    items = [
        (0.0, (b",E0",), [a, b], FORM_READ, 0, 0),
        (0.0, (b",E1",), a + b"\n" + b + b"\n", FORM_WRITTEN, 0, 0),
        (0.0, (b",E2",), c, FORM_ONE, 0, 0),
        (0.0, (b",E3",), a + b"\n" + c, FORM_LINES, 0, 0),
        (0.0, (b",E4",), c + b"\n", FORM_WRITTEN, 0, 0),
    ]
    ts = [b"%d" % i for i in range(len(items))]
    wall = [b"1%d" % i for i in range(len(items))]
    heads: list[bytes] = []
    lines: list[bytes] = []
    bounds: list[int] = []
    assert core.entry_lines(items, ts, wall, heads, lines, bounds)
    assert lines == [a, b, a, b, c, a, c, c]
    assert bounds == [2, 4, 5, 7, 8]
    assert heads[0] is heads[1] and heads[2] is heads[3]  # one head object per entry
    assert heads == [
        b'0,"wall":10,E0', b'0,"wall":10,E0', b'1,"wall":11,E1', b'1,"wall":11,E1',
        b'2,"wall":12,E2', b'3,"wall":13,E3', b'3,"wall":13,E3', b'4,"wall":14,E4',
    ]  # fmt: skip
    # An oversized line is not a message: the caller takes the slow path.
    oversized = [*items[:1], (0.0, (b",E5",), b'{"id":', FORM_OVERSIZED, 99, 6)]
    assert not core.entry_lines(oversized, ts, wall, [], [], [])


class _Writer:
    """What an EntryQueue calls back: the encoder, the callback path, a clock."""

    def __init__(self) -> None:
        self.encodes: list[bool] = []
        self.now: list[tuple[Any, Any, int, int]] = []
        self.time = 0.0

    def clock(self) -> float:
        self.time += 1.0
        return self.time

    def encode(self, leftovers: bool) -> None:
        self.encodes.append(leftovers)

    def record_now(self, ends: Any, data: Any, form: int, oversized: int) -> None:
        self.now.append((ends, data, form, oversized))


def _queue(core: CoreImpl, writer: _Writer, **limits: int) -> Any:
    settings = {"max_entries": 4, "max_bytes": 100, "inline_entries": 3, "inline_bytes": 50}
    settings.update(limits)
    return core.EntryQueue(
        settings["max_entries"],
        settings["max_bytes"],
        settings["inline_entries"],
        settings["inline_bytes"],
        writer.clock,
        writer.encode,
        writer.record_now,
        lambda data, form: len(data),
    )


def test_a_hop_queues_its_reads_and_writes_in_order(core: CoreImpl):
    from acp_fast._core import FORM_READ, FORM_WRITTEN

    writer = _Writer()
    queue = _queue(core, writer)
    hop = core.HopEntries(queue, "IN", "OUT")
    hop.record_out(b'{"id":1}\n')
    hop.record_in([b'{"id":1}'], 9)
    assert queue.pending == [
        (1.0, "OUT", b'{"id":1}\n', FORM_WRITTEN, 0, 9),
        (2.0, "IN", [b'{"id":1}'], FORM_READ, 0, 9),
    ]
    assert (queue.enqueued_entries, queue.enqueued_bytes) == (2, 18)
    assert writer.encodes == []


def test_a_batch_is_encoded_at_its_entry_or_byte_count(core: CoreImpl):
    writer = _Writer()
    queue = _queue(core, writer, max_entries=100, max_bytes=1000)
    for _ in range(3):
        queue.put("E", b"x", 0, 0, 1)
    assert writer.encodes == [False]  # the third entry reached inline_entries
    queue.pending.clear()
    queue.encoded_bytes = queue.enqueued_bytes
    queue.put("E", b"x" * 50, 0, 0, 50)  # 50 bytes not yet encoded
    assert writer.encodes == [False, False]


def test_a_full_queue_drops_and_counts_until_written(core: CoreImpl):
    writer = _Writer()
    queue = _queue(core, writer, inline_entries=100, inline_bytes=1000)
    for _ in range(4):
        queue.put("E", [b"a", b"b"], 0, 0, 10)
    queue.put("E", [b"a", b"b", b"c"], 0, 0, 10)  # a fifth entry: over max_entries
    assert (len(queue.pending), queue.dropped) == (4, 3)
    queue.written_entries, queue.written_bytes = 4, 40  # the writer thread wrote them
    queue.put("E", b"y" * 101, 0, 0, 101)  # alone over max_bytes: still taken
    queue.put("E", [b"z"], 0, 0, 1)  # now over max_bytes: dropped
    assert (len(queue.pending), queue.dropped) == (5, 4)


def test_a_sync_queue_hands_each_entry_over_at_once(core: CoreImpl):
    writer = _Writer()
    queue = _queue(core, writer)
    queue.sync = True
    core.HopEntries(queue, "IN", "OUT").record_in([b"m"], 1)
    assert writer.now == [("IN", [b"m"], core.FORM_READ, 0)]
    assert (queue.pending, queue.enqueued_entries) == ([], 0)
