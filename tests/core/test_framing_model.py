"""LineBuffer against a one-line model of NDJSON framing, on random streams.

The framer has a fast path (one ``bytes.split`` per read) and a line-by-line
path, chosen per read by what the read holds ("\\r", empty lines, lines over
the cap, region size). Whatever the chunking, the output must equal the
model's: split on "\\n", drop one trailing "\\r", drop empty lines, replace a
line longer than the cap (counted with its "\\r") by a marker with its head.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

HEAD = 3


def model(stream: bytes, max_line: int) -> tuple[list[object], object]:
    *complete, tail = stream.split(b"\n")
    out: list[object] = []
    for line in complete:
        if len(line) > max_line:
            out.append(("oversized", len(line), line[: min(HEAD, max_line)], True))
        elif line.removesuffix(b"\r"):
            out.append(line.removesuffix(b"\r"))
    if len(tail) > max_line:
        rest: object = ("oversized", len(tail), tail[: min(HEAD, max_line)], False)
    else:
        rest = tail.removesuffix(b"\r") or None
    return out, rest


def framed(core, stream: bytes, cuts: list[int], max_line: int) -> tuple[list[object], object]:
    buffer = core.LineBuffer(max_line=max_line, head_size=HEAD)
    out: list[object] = []
    start = 0
    for cut in [*sorted(cuts), len(stream)]:
        out.extend(_plain(item) for item in buffer.feed(stream[start:cut]))
        start = max(start, cut)
    rest = buffer.close()
    return out, None if rest is None else _plain(rest)


def _plain(item: object) -> object:
    if isinstance(item, bytes):
        return item
    return ("oversized", item.size, item.head, item.complete)  # type: ignore[attr-defined]


# Lines of JSON-ish bytes, "\r" included, joined by "\n" or "\r\n", with empty
# lines now and then: every branch of the framer's choice gets exercised.
line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"x"))
stream = st.lists(
    st.tuples(line, st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\r\r\n"])), max_size=25
).map(lambda parts: b"".join(body + end for body, end in parts))


@settings(max_examples=400, deadline=None)
@given(
    data=st.tuples(stream, line).flatmap(
        lambda pair: st.tuples(
            st.just(pair[0] + pair[1]), st.lists(st.integers(0, len(pair[0]) + 40), max_size=6)
        )
    ),
    max_line=st.integers(1, 80),
)
def test_framer_matches_the_model(core, data, max_line):
    stream_bytes, cuts = data
    assert framed(core, stream_bytes, cuts, max_line) == model(stream_bytes, max_line)


def test_large_reads_take_the_line_by_line_path(core):
    # Regions over the split limit (256 KiB) are framed with memchr per line.
    lines = [b"x" * 100_000, b"", b"y" * 200_000, b"z"]
    stream = b"\n".join(lines) + b"\n"
    assert framed(core, stream, [], 64 * 1024 * 1024) == ([lines[0], lines[2], lines[3]], None)
