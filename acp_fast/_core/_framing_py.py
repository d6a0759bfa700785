# Newline-delimited JSON framing: bytes in, complete lines out.
#
# ACP transports carry one JSON value per line, separated by b"\n" (ACP spec,
# docs/protocol/v1/transports.mdx). This module only finds line boundaries; it
# never parses JSON.
#
# Invariants
# ----------
# * The cost is linear in the input whatever the chunking: consumed bytes are
#   never scanned again, and each byte is scanned a bounded number of times.
#   A read's complete lines are cut with one bytes.split when the region is
#   small and plain (no "\r" and nothing over the cap, checked with a memchr
#   and a length); otherwise, and for large regions (where split's
#   byte-at-a-time scan loses to memchr), line by line with bytes.find, which
#   on a single byte is a memchr.
# * A line split across reads is kept as a list of fragments and joined once,
#   when its newline arrives. Re-concatenating "rest + chunk" on every read is
#   quadratic for large messages (4 ms per 1 MB line in the measurements behind
#   this design), so it is never done.
# * A line longer than ``max_line`` bytes is never held in memory. Its first
#   ``head_size`` bytes and its last ``head_size`` bytes are kept for
#   diagnosis, the rest is counted and dropped up to the next newline, and
#   one OversizedLine takes the line's place in the output. While the line
#   streams through, an IdScanner finds its top-level "id" wherever it is, so
#   the caller can still answer it (docs/semantics.md §1.4).
#   Framing then goes on with the next line: an oversized message costs that
#   message, never the connection.
# * Output lines never contain b"\n"; one trailing b"\r" is removed (CRLF
#   tolerated). Empty lines produce nothing.
# * Output order is input order, oversized markers included.
#
# This file is compiled by Cython (with _framing_c.pxd) and is also the
# pure-Python fallback, so it must stay plain, typed Python that never imports
# cython.

from __future__ import annotations

import re

# bytes.find with a one-byte needle is a memchr. Calling it through the type
# (rather than as data.find) takes the vectorcall path in both builds, which
# halves the per-line call overhead.
_find = bytes.find
_rfind = bytes.rfind
_NEWLINE = b"\n"
_CR = b"\r"
# Regions up to this size are split with bytes.split (see LineBuffer.feed).
_SPLIT_MAX = 256 * 1024

DEFAULT_MAX_LINE = 64 * 1024 * 1024
DEFAULT_HEAD_SIZE = 64 * 1024

# What the id scanner stops at: inside the top-level object, anything that
# changes depth or ends a member; deeper, only what changes depth.
_TOP_LEVEL = re.compile(rb'["{}\[\],:]').search
_NESTED = re.compile(rb'["{}\[\]]').search
# A top-level "id" value longer than this is not kept (no sane id is).
_ID_TEXT_MAX = 1024
_QUOTE = b'"'


class OversizedLine:
    """Stands in the output for a line that exceeded the framer's cap.

    ``size`` is the line's full length in bytes (without the newline); ``head``
    holds its first bytes, enough to find a leading "id" or "method", and
    ``tail`` its last bytes, enough to find an "id" written after the payload.
    ``complete`` is False only for an oversized unterminated line seen at EOF.
    ``id_text`` is the JSON text of the line's top-level "id" value, wherever
    it was in the line (b"" when the line is not an object or has no such
    member); the framer finds it while the line streams through.
    """

    __slots__ = ("complete", "head", "id_text", "size", "tail")

    def __init__(
        self,
        size: int,
        head: bytes,
        complete: bool = True,
        tail: bytes = b"",
        id_text: bytes = b"",
    ) -> None:
        self.size = size
        self.head = head
        self.complete = complete
        self.tail = tail
        self.id_text = id_text

    def __repr__(self) -> str:
        return f"OversizedLine(size={self.size}, head={self.head[:40]!r}...)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OversizedLine):
            return NotImplemented
        return (self.size, self.head, self.complete) == (other.size, other.head, other.complete)

    __hash__ = None  # type: ignore[assignment]


class LineBuffer:
    """Incremental NDJSON splitter with a per-line size cap.

    ``feed(data)`` returns the lines completed by ``data``; ``close()`` returns
    the unterminated rest at EOF (or None).
    """

    __slots__ = (
        "_discarded",
        "_fragments",
        "_head",
        "_pending",
        "_scanner",
        "_tail",
        "head_size",
        "max_line",
    )

    def __init__(
        self, max_line: int = DEFAULT_MAX_LINE, head_size: int = DEFAULT_HEAD_SIZE
    ) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self.head_size = min(head_size, max_line)
        # Fragments of the current unterminated line, and their total size.
        self._fragments: list[bytes] = []
        self._pending = 0
        # While dropping an oversized line: bytes dropped so far (-1 when not
        # dropping), the kept head and the last bytes seen.
        self._discarded = -1
        self._head = b""
        self._tail = b""
        self._scanner: IdScanner | None = None

    @property
    def buffered(self) -> int:
        """Bytes of the current unterminated line held or dropped so far."""
        if self._discarded >= 0:
            return self._discarded
        return self._pending

    def feed(self, data: bytes) -> list[bytes | OversizedLine]:
        out: list[bytes | OversizedLine] = []
        end = len(data)
        start = 0
        nl = 0
        if self._pending or self._discarded >= 0:
            # Finish the line carried over from earlier reads first.
            nl = _find(data, _NEWLINE)
            if nl < 0:
                self._carry(data, 0, end)
                return out
            self._finish_carried(data, nl, out)
            start = nl + 1
            if start == end:
                return out
        last = _rfind(data, _NEWLINE, start)  # memrchr
        if last < 0:
            self._carry(data, start, end)
            return out
        if (
            end - start <= _SPLIT_MAX
            and last - start <= self.max_line
            and _find(data, _CR, start, last) < 0
        ):
            # Fast path: no "\r" and no line over the cap. One bytes.split
            # makes every line in C: ~70 ns per line, against 190 (compiled)
            # or 390 (pure) for a find-and-slice loop. Only small regions take
            # it: split scans a byte at a time where find is a memchr, which
            # matters for megabyte lines.
            if start == 0:
                lines = data.split(_NEWLINE)
                rest = lines.pop()  # after the last newline: b"" or a line start
            else:
                lines = data[start:last].split(_NEWLINE)
                rest = data[last + 1 :]
            if not all(lines):  # 7 ns per line; a find of "\n\n" costs 65
                lines = [line for line in lines if line]
            if out:
                out.extend(lines)
            else:
                out = lines  # type: ignore[assignment]
            if rest:
                self._carry(rest, 0, len(rest))
            return out
        max_line = self.max_line
        while start < end:
            nl = _find(data, _NEWLINE, start)
            if nl < 0:
                self._carry(data, start, end)
                break
            if nl - start > max_line:
                scanner = IdScanner()
                scanner.feed(data, start, nl)
                out.append(
                    OversizedLine(
                        nl - start,
                        data[start : start + self.head_size],
                        True,
                        data[max(start, nl - self.head_size) : nl],
                        scanner.id_text,
                    )
                )
            elif nl > start:
                if data[nl - 1] == 13:  # b"\r"
                    if nl - 1 > start:
                        out.append(data[start : nl - 1])
                else:
                    out.append(data[start:nl])
            start = nl + 1
        return out

    def close(self) -> bytes | OversizedLine | None:
        """Return the unterminated last line at EOF, if any, and reset."""
        rest: bytes | OversizedLine | None = None
        if self._discarded >= 0:
            rest = OversizedLine(self._discarded, self._head, False, self._tail, self._id_text())
        elif self._pending:
            line = b"".join(self._fragments)
            if line.endswith(b"\r"):
                line = line[:-1]
            if line:
                rest = line
        self._reset()
        return rest

    def _reset(self) -> None:
        self._fragments = []
        self._pending = 0
        self._discarded = -1
        self._head = b""
        self._tail = b""
        self._scanner = None

    def _id_text(self) -> bytes:
        scanner = self._scanner
        return b"" if scanner is None else scanner.id_text

    def _carry(self, data: bytes, start: int, end: int) -> None:
        # Keep data[start:end], the beginning of a line whose newline has not
        # arrived, unless that makes the line too long.
        size = end - start
        if self._discarded >= 0:
            self._discarded += size
            self._keep_tail(data, start, end)
            if self._scanner is not None:
                self._scanner.feed(data, start, end)
            return
        if self._pending + size > self.max_line:
            self._fragments.append(data[start:end])
            self._scanner = _scanned(self._fragments)
            self._head = _head_of(self._fragments, self.head_size)
            self._tail = _tail_of(self._fragments, self.head_size)
            self._discarded = self._pending + size
            self._fragments = []
            self._pending = 0
            return
        self._fragments.append(data[start:end] if start or end != len(data) else data)
        self._pending += size

    def _finish_carried(self, data: bytes, nl: int, out: list[bytes | OversizedLine]) -> None:
        if self._discarded >= 0:
            self._keep_tail(data, 0, nl)
            if self._scanner is not None:
                self._scanner.feed(data, 0, nl)
            out.append(
                OversizedLine(self._discarded + nl, self._head, True, self._tail, self._id_text())
            )
            self._reset()
            return
        if self._pending + nl > self.max_line:
            self._fragments.append(data[:nl])
            head = _head_of(self._fragments, self.head_size)
            tail = _tail_of(self._fragments, self.head_size)
            id_text = _scanned(self._fragments).id_text
            out.append(OversizedLine(self._pending + nl, head, True, tail, id_text))
            self._reset()
            return
        self._fragments.append(data[:nl])
        line = b"".join(self._fragments)
        self._fragments = []
        self._pending = 0
        if line.endswith(b"\r"):
            line = line[:-1]
        if line:
            out.append(line)

    def _keep_tail(self, data: bytes, start: int, end: int) -> None:
        # The last head_size bytes of the line being dropped.
        size = self.head_size
        if end - start >= size:
            self._tail = data[end - size : end]
        else:
            self._tail = (self._tail + data[start:end])[-size:]


def _scanned(fragments: list[bytes]) -> IdScanner:
    # A scanner that has read the fragments, in order.
    scanner = IdScanner()
    for fragment in fragments:
        scanner.feed(fragment, 0, len(fragment))
    return scanner


def _tail_of(fragments: list[bytes], size: int) -> bytes:
    # The last ``size`` bytes, joining only the fragments they span.
    taken: list[bytes] = []
    have = 0
    for fragment in reversed(fragments):
        taken.append(fragment)
        have += len(fragment)
        if have >= size:
            break
    taken.reverse()
    joined = b"".join(taken)
    return joined[len(joined) - size :] if len(joined) > size else joined


def _head_of(fragments: list[bytes], size: int) -> bytes:
    # Join only as many fragments as the head needs: the line may be huge.
    taken: list[bytes] = []
    have = 0
    for fragment in fragments:
        taken.append(fragment)
        have += len(fragment)
        if have >= size:
            break
    return b"".join(taken)[:size]


class IdScanner:
    """Finds the top-level "id" member of a JSON object fed in pieces.

    An oversized line is never held whole, so its "id" is looked for while
    the line streams through the framer (docs/semantics.md §1.4). The state
    is small: the depth, whether the scan is inside a string and whether a
    backslash run before the piece's end escapes the next byte, and the text
    of the current top-level key and, after "id", of its value. Strings are
    crossed with a find for the next quote (a memchr), nested values with a
    regex search for the next bracket or quote, so a huge payload costs a
    few calls per token rather than one per byte. The scan is not a
    validator: it only tracks what it needs, and gives up (finds nothing
    more) on a line that is not an object or once the object has closed.
    """

    __slots__ = (
        "_depth",
        "_done",
        "_escaped",
        "_expect_key",
        "_in_key",
        "_in_string",
        "_in_value",
        "_key",
        "_key_is_id",
        "_value",
        "id_text",
    )

    def __init__(self) -> None:
        self._depth = 0
        self._done = False
        self._in_string = False
        self._escaped = False
        self._expect_key = False
        self._in_key = False
        self._key = b""
        self._key_is_id = False
        self._in_value = False
        self._value = b""
        # The last complete top-level "id" value seen, as JSON text.
        self.id_text = b""

    def feed(self, data: bytes, start: int, end: int) -> None:
        """Scan ``data[start:end]``, the next piece of the line."""
        if self._done:
            return
        i = start
        key_start = start
        value_start = start
        while i < end:
            if self._in_string:
                q = _find(data, _QUOTE, i, end)
                if q < 0:
                    # The piece ends inside the string: remember whether its
                    # trailing backslashes escape the next piece's first byte.
                    k = end - 1
                    while k >= i and data[k] == 92:
                        k -= 1
                    run = end - 1 - k
                    if k < i and self._escaped:
                        run += 1
                    self._escaped = run % 2 == 1
                    break
                k = q - 1
                while k >= i and data[k] == 92:  # "\\"
                    k -= 1
                run = q - 1 - k
                if k < i and self._escaped:
                    run += 1
                self._escaped = False
                i = q + 1
                if run % 2 == 1:
                    continue  # an escaped quote: still inside
                self._in_string = False
                if self._in_key:
                    self._in_key = False
                    self._add_key(data, key_start, q)
                    self._key_is_id = self._key == b"id"
                continue
            if self._depth >= 2:
                match = _NESTED(data, i, end)
                if match is None:
                    break
                p = match.start()
                c = data[p]
                i = p + 1
                if c == 34:  # '"'
                    self._in_string = True
                elif c == 123 or c == 91:  # "{" or "["
                    self._depth += 1
                else:
                    self._depth -= 1
                continue
            if self._depth == 0:
                while i < end and data[i] in b" \t\r\n":
                    i += 1
                if i >= end:
                    break
                if data[i] != 123:  # not an object: nothing to find
                    self._done = True
                    return
                self._depth = 1
                self._expect_key = True
                i += 1
                continue
            match = _TOP_LEVEL(data, i, end)
            if match is None:
                break
            p = match.start()
            c = data[p]
            i = p + 1
            if c == 34:  # '"'
                self._in_string = True
                if self._expect_key:
                    self._in_key = True
                    self._key = b""
                    key_start = i
            elif c == 58:  # ":"
                self._expect_key = False
                if self._key_is_id:
                    self._in_value = True
                    self._value = b""
                    value_start = i
            elif c == 44 or c == 125:  # "," or "}"
                if self._in_value:
                    self._in_value = False
                    self._add_value(data, value_start, p)
                    self.id_text = self._value.strip()
                    self._value = b""
                self._key_is_id = False
                self._expect_key = True
                if c == 125:
                    self._done = True
                    return
            elif c == 123 or c == 91:  # a nested value: never an id
                self._in_value = False
                self._value = b""
                self._depth = 2
            else:  # "]" at the top level: not JSON, stop
                self._done = True
                return
        if self._in_key:
            self._add_key(data, key_start, end)
        if self._in_value:
            self._add_value(data, value_start, end)

    def _add_key(self, data: bytes, start: int, end: int) -> None:
        # Only whether the key is exactly "id" matters: keep at most 3 bytes.
        if len(self._key) <= 2:
            self._key = self._key + data[start : min(end, start + 3)]

    def _add_value(self, data: bytes, start: int, end: int) -> None:
        if len(self._value) + end - start > _ID_TEXT_MAX:
            self._in_value = False  # too long for an id: forget it
            self._value = b""
            return
        self._value = self._value + data[start:end]
