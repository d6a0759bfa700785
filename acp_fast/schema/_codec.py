"""Decoding and encoding of the generated message types.

Theory of operation
-------------------

**Fast path.**  ``decode(T, data)`` is one typed msgspec decode with a decoder
built once per type and cached.  Tagged unions are msgspec tagged unions, fields
are validated as declared; a valid message never runs Python code of ours
(except ``ObjectUnion`` dispatch, below).

**Lenient path.**  Only when that decode raises ``msgspec.ValidationError`` the
bytes are decoded to builtins and walked against the type (``_lenient``), applying
what msgspec cannot express:

* open unions (every v2 tagged union, a few v1 ones): an unknown tag becomes an
  ``UnknownVariant`` (the JSON object as received) instead of an error, as long as it
  still matches the union's ``<Union>Other`` fields;
* ``x-deserialize-default-on-error``: a field that fails to decode is dropped (an
  optional one becomes ``UNSET``, a required list becomes ``[]``);
* ``x-deserialize-skip-invalid-items``: list items that fail to decode are dropped.

A known tag with a malformed body is still an error; it is never demoted to an
unknown variant (inside a lenient field or list that error drops the field or the
item, like any other).  If the walk fails too, ``SchemaError`` says where.

**Object unions.**  Unions msgspec cannot decode natively (an untagged member, or a
union that is a method payload) are marker classes (``ObjectUnion``) that every
member inherits; msgspec passes their JSON object to ``_dec_hook``, which picks the
member by tag or tries the untagged members in order.

**Unknown variants** are ``UnknownVariant`` objects: ``dict`` subclasses holding the
JSON object exactly as received, with ``tag_field``/``tag`` for convenience.  Being
dicts, they re-encode byte-for-byte equivalent (unknown fields included) with
``encode`` or any msgspec encoder.  Type checkers see them in open union aliases
(``ContentBlock = ContentBlockText | ... | UnknownVariant``); at run time msgspec sees
only the known variants.

Unknown *fields* of known types are ignored, as msgspec does; forward the original
bytes when a message must pass through unchanged.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, overload

import msgspec

from acp_fast.schema import _lenient

__all__ = ("convert", "decode", "decoder", "encode")

T = TypeVar("T")

Buffer = bytes | bytearray | memoryview | str

_DECODERS: Final[dict[Any, msgspec.json.Decoder[Any]]] = {}
_ENCODER: Final = msgspec.json.Encoder()


def decoder(tp: Any) -> msgspec.json.Decoder[Any]:
    """The cached strict decoder of ``tp`` (built on first use)."""
    try:
        return _DECODERS[tp]
    except KeyError:
        dec = _DECODERS[tp] = msgspec.json.Decoder(tp, dec_hook=_lenient.dec_hook)
        return dec


@overload
def decode(tp: type[T], data: Buffer) -> T: ...
@overload
def decode(tp: Any, data: Buffer) -> Any: ...
def decode(tp: Any, data: Buffer) -> Any:
    """Decode JSON ``data`` into ``tp`` (a generated class or union alias).

    Open-union positions may hold ``UnknownVariant`` objects (for an open union
    payload, the result itself may be one).

    Raises:
        SchemaError: the JSON does not match ``tp`` (a ``msgspec.ValidationError``).
        msgspec.DecodeError: ``data`` is not JSON.
    """
    try:
        dec = _DECODERS[tp]
    except KeyError:
        dec = decoder(tp)
    try:
        return dec.decode(data)
    except msgspec.ValidationError:
        pass
    # Outside the except block: the fast path's error is not the cause of anything.
    return _lenient.convert(tp, msgspec.json.decode(data))


@overload
def convert(tp: type[T], obj: Any) -> T: ...
@overload
def convert(tp: Any, obj: Any) -> Any: ...
def convert(tp: Any, obj: Any) -> Any:
    """Like ``decode``, from already decoded JSON builtins (dicts, lists, str, ...).

    Raises:
        SchemaError: ``obj`` does not match ``tp``.
    """
    try:
        return msgspec.convert(obj, tp, dec_hook=_lenient.dec_hook)
    except msgspec.ValidationError:
        pass
    return _lenient.convert(tp, obj)


def encode(obj: Any) -> bytes:
    """Encode a message (or any JSON-able value holding messages) to JSON bytes."""
    return _ENCODER.encode(obj)
