# JSON-RPC 2.0 message classification, as ACP peers must do it.
#
# The rules are those of docs/semantics.md §1.1, §1.4 and §1.5, stated once
# here and nowhere else:
#
# * "jsonrpc" must be exactly "2.0".
# * "method" present, neither "result" nor "error": a request when the "id" key
#   exists (whatever its value, null included), else a notification. The
#   method must be a string.
# * no "method", an "id", exactly one of "result" / "error": a response.
# * "params", when present and not null, must be an object or an array.
# * an id is a string, an integer in the signed 64-bit range, or null. Never a
#   float or a bool: 1, 1.0, true and "1" must not alias, and in Python
#   1 == 1.0 == True as dict keys, so the type check is what keeps them apart.
# * Anything else is invalid. Invalid and call-shaped (has "method", or is
#   neither a request nor a response) is answered with -32600 and id null;
#   invalid and response-shaped (no "method", has "result" or "error") is
#   dropped, because answering a response would start a reply loop.
#
# The function takes the envelope's fields rather than a dict so the caller can
# decode the envelope without materialising params or result (they stay raw
# JSON until a handler asks for them); absent keys are passed as MISSING.
#
# scan_head() serves messages too large to decode: it reads the top-level keys
# of a line's first bytes to find an "id" worth answering.
#
# This file is compiled by Cython (with _messages_c.pxd) and is also the
# pure-Python fallback; it must never import cython.

from __future__ import annotations

import json
import re
from typing import Any

from ._constants import (
    ERROR_RESPONSE,
    INVALID_CALL,
    INVALID_RESPONSE,
    MISSING,
    NOTIFICATION,
    PARAMS_ABSENT,
    REQUEST,
    RESULT_RESPONSE,
    SHAPE_CALL,
    SHAPE_RESPONSE,
    SHAPE_UNKNOWN,
)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def is_valid_id(value: object) -> bool:
    """True for a JSON-RPC id ACP accepts: str, 64-bit int (not bool), or None."""
    if value is None:
        return True
    kind = type(value)
    if kind is str:
        return True
    if kind is int:
        return _INT64_MIN <= value <= _INT64_MAX  # type: ignore[operator]
    return False


def classify(
    jsonrpc: object,
    id: object,
    method: object,
    params_head: int,
    has_result: bool,
    has_error: bool,
) -> int:
    """Classify one decoded JSON-RPC object from its top-level fields.

    ``id`` and ``method`` are MISSING when the key is absent. ``params_head``
    is the first byte of the params' JSON text (PARAMS_ABSENT when absent).
    Returns one of REQUEST, NOTIFICATION, RESULT_RESPONSE, ERROR_RESPONSE,
    INVALID_CALL, INVALID_RESPONSE.
    """
    if method is not MISSING:
        if (
            has_result
            or has_error
            or type(method) is not str
            or not (
                params_head < 0 or params_head == 123 or params_head == 91 or params_head == 110
            )
            or jsonrpc != "2.0"
        ):
            return INVALID_CALL
        if id is MISSING:
            return NOTIFICATION
        if is_valid_id(id):
            return REQUEST
        return INVALID_CALL
    if has_result:
        if has_error or id is MISSING or jsonrpc != "2.0" or not is_valid_id(id):
            return INVALID_RESPONSE
        return RESULT_RESPONSE
    if has_error:
        if id is MISSING or jsonrpc != "2.0" or not is_valid_id(id):
            return INVALID_RESPONSE
        return ERROR_RESPONSE
    return INVALID_CALL


def classify_envelope(envelope: Any) -> int:
    """``classify`` of a decoded envelope, in one call.

    ``envelope`` has the attributes jsonrpc, id, method, params, result and
    error, absent ones MISSING, and params as raw JSON text (any buffer).
    Compiled, this saves the caller the attribute reads and a six-argument
    call per message.
    """
    params = envelope.params
    return classify(
        envelope.jsonrpc,
        envelope.id,
        envelope.method,
        PARAMS_ABSENT if params is MISSING else memoryview(params)[0],
        envelope.result is not MISSING,
        envelope.error is not MISSING,
    )


def params_head_of(params: object) -> int:
    """The params head of an already-decoded params value (for batch entries)."""
    kind = type(params)
    if kind is dict:
        return 123
    if kind is list:
        return 91
    if params is None:
        return 110
    return 0


# --- oversized lines -------------------------------------------------------

_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_WHITESPACE = b" \t\r\n"
_NUMBER_TAIL = b".eE+-0123456789"
_SCALAR_BYTES = b".eE+-0123456789truefalsn"  # what a number, true, false or null is made of


def scan_head(head: bytes) -> tuple[object, int]:
    """Find what the first bytes of an oversized message say about it.

    Returns ``(id, shape)``: the top-level "id" if it was read completely and
    is valid (else MISSING), and SHAPE_CALL when a top-level "method" was seen,
    SHAPE_RESPONSE when "result" or "error" was, SHAPE_UNKNOWN otherwise.
    Never raises; a head that is not a JSON object is SHAPE_UNKNOWN.
    """
    request_id: object = MISSING
    shape = SHAPE_UNKNOWN
    end = len(head)
    i = _skip_ws(head, 0)
    if i >= end or head[i] != 123:  # not an object (a batch, say)
        return MISSING, SHAPE_UNKNOWN
    i += 1
    while True:
        i = _skip_ws(head, i)
        if i >= end or head[i] == 125:  # end of head, or "}"
            break
        if head[i] == 44:  # ","
            i += 1
            continue
        if head[i] != 34:  # not a key
            break
        key_end = _string_end(head, i)
        if key_end < 0:
            break
        try:
            key = json.loads(head[i:key_end].decode("utf-8"))
        except ValueError:
            break
        i = _skip_ws(head, key_end)
        if i >= end or head[i] != 58:  # ":"
            break
        i = _skip_ws(head, i + 1)
        if i >= end:
            break
        if key == "method":
            shape = SHAPE_CALL
        elif (key == "result" or key == "error") and shape == SHAPE_UNKNOWN:
            shape = SHAPE_RESPONSE
        if key == "id":
            value, j = _scalar(head, i)
            if j < 0:
                # An object or array (never an id), or cut short: skip it, so
                # that a "method", "result" or "error" after it still counts.
                i = _skip_value(head, i)
                if i < 0:
                    break
                continue
            if is_valid_id(value) and _encodable(value):
                request_id = value
            i = j
            continue
        i = _skip_value(head, i)
        if i < 0:
            break
    return request_id, shape


def scan_tail(tail: bytes) -> object:
    """Find a top-level "id" in the last bytes of an oversized message.

    Walks the object backwards from its closing brace, one member at a time
    (a string's opening quote is the first quote before it that no backslash
    escapes), so only the top level is read. Returns the id when it was read
    completely and is valid, else MISSING. Never raises.
    """
    i = _skip_ws_back(tail, len(tail) - 1)
    if i < 0 or tail[i] != 125:  # "}"
        return MISSING
    i -= 1
    while True:
        i = _skip_ws_back(tail, i)
        if i < 0 or tail[i] == 123:  # the object's start: no id after the payload
            return MISSING
        value_end = i + 1
        i = _value_start_back(tail, i)
        if i < 0:
            return MISSING
        value_start = i
        i = _skip_ws_back(tail, i - 1)
        if i < 0 or tail[i] != 58:  # ":"
            return MISSING
        i = _skip_ws_back(tail, i - 1)
        if i < 0 or tail[i] != 34:
            return MISSING
        key_start = _string_start_back(tail, i)
        if key_start < 0:
            return MISSING
        if tail[key_start : i + 1] == b'"id"':
            value, j = _scalar(tail + b" ", value_start)
            if j != value_end or not is_valid_id(value) or not _encodable(value):
                return MISSING
            return value
        i = _skip_ws_back(tail, key_start - 1)
        if i < 0 or tail[i] != 44:  # ","
            return MISSING
        i -= 1


def _skip_ws_back(data: bytes, i: int) -> int:
    while i >= 0 and data[i] in _WHITESPACE:
        i -= 1
    return i


def _string_start_back(data: bytes, i: int) -> int:
    # data[i] is a closing quote; return the index of its opening quote, or -1.
    j = i - 1
    while j >= 0:
        if data[j] == 34:
            k = j - 1
            while k >= 0 and data[k] == 92:
                k -= 1
            if (j - k) % 2 == 1:  # an even number of backslashes before it
                return j
        j -= 1
    return -1


def _value_start_back(data: bytes, i: int) -> int:
    # data[i] is the last byte of a value; return the index of its first, or -1.
    c = data[i]
    if c == 34:
        return _string_start_back(data, i)
    if c == 125 or c == 93:  # "}" "]"
        depth = 0
        while i >= 0:
            c = data[i]
            if c == 34:
                i = _string_start_back(data, i)
                if i < 0:
                    return -1
            elif c == 125 or c == 93:
                depth += 1
            elif c == 123 or c == 91:
                depth -= 1
                if depth == 0:
                    return i
            i -= 1
        return -1
    j = i
    while j >= 0 and data[j] in _SCALAR_BYTES:
        j -= 1
    return j + 1 if j < i else -1


def _skip_ws(data: bytes, i: int) -> int:
    end = len(data)
    while i < end and data[i] in _WHITESPACE:
        i += 1
    return i


def _string_end(data: bytes, i: int) -> int:
    # data[i] is the opening quote; return the index after the closing quote,
    # or -1 when the string runs past the end of data.
    end = len(data)
    j = i + 1
    while j < end:
        c = data[j]
        if c == 92:  # backslash: skip the escaped byte
            j += 2
            continue
        if c == 34:
            return j + 1
        j += 1
    return -1


def _scalar(data: bytes, i: int) -> tuple[object, int]:
    # Read a string, number, true, false or null at data[i]. Returns
    # (value, index after it); index -1 when truncated or not a scalar.
    c = data[i]
    if c == 34:
        j = _string_end(data, i)
        if j < 0:
            return MISSING, -1
        try:
            return json.loads(data[i:j].decode("utf-8")), j
        except ValueError:
            return MISSING, -1
    for word, value in ((b"null", None), (b"true", True), (b"false", False)):
        if data.startswith(word, i):
            return value, i + len(word)
    match = _NUMBER.match(data, i)
    if match is None or match.end() >= len(data) or data[match.end()] in _NUMBER_TAIL:
        # Not a number, or it may continue past the head, or it goes on in a
        # way the pattern did not take ("0." cut before its digits read as
        # the integer 0, making up an id).
        return MISSING, -1
    text = match.group()
    if match.group(1) is not None or match.group(2) is not None:
        return float(text), match.end()
    if len(text) > 20:
        # Longer than any 64-bit integer (and int() refuses more than 4300
        # digits, which made scan_head raise): not an id, whatever it is.
        return MISSING, match.end()
    return int(text), match.end()


def _encodable(value: object) -> bool:
    # A string id with a lone surrogate ("\ud800" escaped in the JSON) cannot
    # be written back in an answer: it is not an id worth answering.
    if type(value) is not str:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _skip_value(data: bytes, i: int) -> int:
    # Skip one JSON value of any kind; -1 when it runs past the end of data.
    c = data[i]
    if c != 123 and c != 91:
        _, j = _scalar(data, i)
        return j
    end = len(data)
    depth = 0
    j = i
    while j < end:
        c = data[j]
        if c == 34:
            j = _string_end(data, j)
            if j < 0:
                return -1
            continue
        if c == 123 or c == 91:
            depth += 1
        elif c == 125 or c == 93:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return -1
