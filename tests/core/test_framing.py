"""LineBuffer: NDJSON splitting, carried fragments, the per-line cap."""

from __future__ import annotations

import pytest


def feed_all(buffer, chunks):
    out = []
    for chunk in chunks:
        out.extend(buffer.feed(chunk))
    return out


def test_whole_lines_in_one_chunk(core):
    buffer = core.LineBuffer()
    assert buffer.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert buffer.buffered == 0
    assert buffer.close() is None


def test_line_split_across_chunks_is_joined(core):
    buffer = core.LineBuffer()
    assert buffer.feed(b'{"a":') == []
    assert buffer.buffered == 5
    assert buffer.feed(b"1") == []
    assert buffer.feed(b'}\n{"b"') == [b'{"a":1}']
    assert buffer.feed(b":2}\n") == [b'{"b":2}']


def test_every_byte_boundary_gives_the_same_lines(core):
    data = b'{"x":"y"}\r\n\n{"z":[1,2]}\n{"tail":true}'
    expected = [b'{"x":"y"}', b'{"z":[1,2]}']
    for cut in range(len(data) + 1):
        buffer = core.LineBuffer()
        out = buffer.feed(data[:cut]) + buffer.feed(data[cut:])
        assert out == expected, cut
        assert buffer.close() == b'{"tail":true}'


def test_crlf_is_tolerated_and_empty_lines_produce_nothing(core):
    buffer = core.LineBuffer()
    assert buffer.feed(b"\n\r\n{}\r\n\n") == [b"{}"]
    assert buffer.feed(b"\r") == []
    assert buffer.feed(b"\n") == []


def test_close_returns_the_unterminated_rest_once(core):
    buffer = core.LineBuffer()
    buffer.feed(b'{"partial":')
    assert buffer.close() == b'{"partial":'
    assert buffer.close() is None
    assert buffer.feed(b"{}\n") == [b"{}"]


def test_oversized_line_in_one_chunk_is_replaced_by_a_marker(core):
    buffer = core.LineBuffer(max_line=10, head_size=4)
    out = buffer.feed(b'{"id":1}\n{"id":2,"x":"long"}\n{"id":3}\n')
    assert out[0] == b'{"id":1}'
    assert out[1] == core.OversizedLine(19, b'{"id', True)
    assert out[2] == b'{"id":3}'


def test_oversized_line_across_chunks_is_dropped_and_framing_continues(core):
    buffer = core.LineBuffer(max_line=8, head_size=6)
    chunks = [b'{"id":7,', b'"big":"', b"0123456789", b'"}\n{"ok":1}\n']
    out = feed_all(buffer, chunks)
    size = len(b'{"id":7,"big":"0123456789"}')
    assert out == [core.OversizedLine(size, b'{"id":', True), b'{"ok":1}']
    assert buffer.buffered == 0


def test_line_exactly_at_the_cap_passes(core):
    buffer = core.LineBuffer(max_line=8)
    assert feed_all(buffer, [b"1234", b"5678\n"]) == [b"12345678"]
    assert buffer.feed(b"123456789\n") == [core.OversizedLine(9, b"12345678", True)]


def test_oversized_unterminated_line_at_eof(core):
    buffer = core.LineBuffer(max_line=4, head_size=2)
    buffer.feed(b"abcdefgh")
    assert buffer.buffered == 8
    buffer.feed(b"ij")
    assert buffer.close() == core.OversizedLine(10, b"ab", False)


def test_large_line_in_many_chunks_is_joined_once(core):
    payload = b'{"data":"' + b"x" * 1_000_000 + b'"}'
    data = payload + b"\n"
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    buffer = core.LineBuffer()
    assert feed_all(buffer, chunks) == [payload]


def test_invalid_cap_is_refused(core):
    with pytest.raises(ValueError):
        core.LineBuffer(max_line=0)
