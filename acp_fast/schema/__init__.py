"""Typed ACP messages: generated classes plus a fast codec.

The generated modules hold one ``msgspec.Struct`` per schema definition::

    from acp_fast.schema import v1          # ACP v1, stable methods (the default)
    from acp_fast.schema import v1_unstable # ... plus the draft methods
    from acp_fast.schema import v2, v2_unstable

This package is their codec::

    params = decode(v1.SessionNotification, raw_params_bytes)
    data = encode(v1.InitializeRequest(protocol_version=1))

``decode`` is one typed msgspec decode; only a message that fails it takes the
lenient path (open unions, ``x-deserialize-*`` rules).  ``_codec`` documents both,
and how unknown union variants are kept (``UnknownVariant``).
"""

from __future__ import annotations

from acp_fast.schema._base import Base as Base
from acp_fast.schema._base import MethodInfo as MethodInfo
from acp_fast.schema._base import ObjectUnion as ObjectUnion
from acp_fast.schema._base import SchemaError as SchemaError
from acp_fast.schema._base import UnknownVariant as UnknownVariant
from acp_fast.schema._codec import convert as convert
from acp_fast.schema._codec import decode as decode
from acp_fast.schema._codec import decoder as decoder
from acp_fast.schema._codec import encode as encode

__all__ = (
    "Base",
    "MethodInfo",
    "ObjectUnion",
    "SchemaError",
    "UnknownVariant",
    "convert",
    "decode",
    "decoder",
    "encode",
)
