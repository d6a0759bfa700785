"""JSON text of JSON-RPC messages: envelope decoding and message encoding.

Incoming lines are decoded into an ``Envelope`` whose ``params`` and
``result`` stay raw JSON (``msgspec.Raw``): classifying and routing a message
needs only its top-level keys, a forwarded message is passed on without ever
being parsed, and a typed handler decodes its params straight from the raw
bytes into its message class, once. Absent keys decode as the core's MISSING,
so an absent "id" and ``"id": null`` stay different things (§1.1).

Outgoing messages are assembled from pre-encoded pieces: the envelope is fixed
text, the method name is encoded once per method, and only the id and the
payload are encoded per message.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from .._core import MISSING

__all__ = (
    "Envelope",
    "decode_envelope",
    "encode_error",
    "encode_notification",
    "encode_payload",
    "encode_request",
    "encode_result",
    "has_more_entries",
    "loads",
)


class Envelope(msgspec.Struct):
    """The top level of one JSON-RPC object, payloads left as raw JSON."""

    jsonrpc: Any = MISSING
    id: Any = MISSING
    method: Any = MISSING
    params: msgspec.Raw = MISSING  # type: ignore[assignment]
    result: msgspec.Raw = MISSING  # type: ignore[assignment]
    error: Any = MISSING


_envelope_decoder: Final = msgspec.json.Decoder(Envelope)
_any_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()

decode_envelope: Final = _envelope_decoder.decode
"""Decode one line into an Envelope.

Raises msgspec.ValidationError for valid JSON that is not an object (a batch,
a scalar), and msgspec.DecodeError for text that is not JSON.
"""

loads: Final = _any_decoder.decode
"""Decode JSON text (bytes, or a Raw) into plain Python values."""

_STRUCTURAL: Final = re.compile(rb'[\[\]{},"]')
_STRING_REST: Final = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def has_more_entries(line: bytes, limit: int) -> bool:
    """True when the JSON array ``line`` has more than ``limit`` entries.

    Counted without decoding anything (a line of a few MB can hold millions
    of tiny entries, each a Python object once decoded): it stops at the
    first entry past ``limit``, skips strings whole, and holds nothing.
    """
    search = _STRUCTURAL.search
    string_rest = _STRING_REST.match
    depth = 0
    commas = 0
    position = 0
    while True:
        found = search(line, position)
        if found is None:
            return False
        char = line[found.start()]
        position = found.end()
        if char == 34:  # '"'
            rest = string_rest(line, position)
            if rest is None:
                return False
            position = rest.end()
        elif char == 91 or char == 123:  # '[' '{'
            depth += 1
        elif char == 93 or char == 125:  # ']' '}'
            depth -= 1
        elif depth == 1:
            commas += 1
            if commas >= limit:
                return True


encode_payload: Final = _encoder.encode
_encode: Final = _encoder.encode
"""Encode any payload (dict, list, msgspec.Struct, Raw, ...) to JSON bytes."""


_REQUEST_HEAD: Final = b'{"jsonrpc":"2.0","id":'
_NOTIFICATION_HEAD: Final = b'{"jsonrpc":"2.0","method":'
_method_cache: dict[str, bytes] = {}


def _method_json(method: str) -> bytes:
    encoded = _method_cache.get(method)
    if encoded is None:
        encoded = _encoder.encode(method)
        # Methods are few, but a proxy forwards names a peer chose: keep only
        # short ones, and never grow without bound (docs/semantics.md §2.2).
        if len(_method_cache) < 4096 and len(method) <= 256:
            _method_cache[method] = encoded
    return encoded


def encode_request(request_id: int, method: str, params: object) -> bytes:
    """One request line (with its newline). ``params`` None omits the key."""
    # The cache lookup is inlined: this runs per request.
    encoded = _method_cache.get(method) or _method_json(method)
    if params is None:
        return b'%s%d,"method":%s}\n' % (_REQUEST_HEAD, request_id, encoded)
    return b'%s%d,"method":%s,"params":%s}\n' % (
        _REQUEST_HEAD,
        request_id,
        encoded,
        _encode(params),
    )


def notification_head(method: str) -> bytes:
    """A notification line up to its params: ``encode_notification(method,
    params)`` is this, the encoded params and ``}\\n``."""
    return b'%s%s,"params":' % (_NOTIFICATION_HEAD, _encoder.encode(method))


def encode_notification(method: str, params: object) -> bytes:
    """One notification line (with its newline). ``params`` None omits the key."""
    encoded = _method_cache.get(method) or _method_json(method)
    if params is None:
        return b"%s%s}\n" % (_NOTIFICATION_HEAD, encoded)
    return b'%s%s,"params":%s}\n' % (_NOTIFICATION_HEAD, encoded, _encode(params))


def encode_result(request_id: object, result: object) -> bytes:
    """One success response line; a None result is written as ``null``."""
    if type(request_id) is int:  # our peers' usual ids: %d saves an encoder call
        return b'{"jsonrpc":"2.0","id":%d,"result":%s}\n' % (request_id, _encode(result))
    return b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (
        _encode(request_id),
        _encode(result),
    )


def encode_error(request_id: object, error: dict[str, Any]) -> bytes:
    """One error response line."""
    return b'{"jsonrpc":"2.0","id":%s,"error":%s}\n' % (
        _encoder.encode(request_id),
        _encoder.encode(error),
    )
