"""The official SDK's benchmark code (``_official``), run on acp_fast.compat.

Nothing of ``_official`` changes: ``import acp`` resolves to
``acp_fast.compat`` in this process (and in its stdio peer), which is the
migration the compatibility layer promises. The row measures what that
migration alone buys.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

__all__ = ("codec_costs", "core", "official_code", "run_peer")


def _alias() -> None:
    import acp_fast.compat as compat

    sys.modules["acp"] = compat
    sys.modules["acp.schema"] = compat.schema
    sys.modules["acp.helpers"] = compat.helpers
    sys.modules["acp.interfaces"] = compat.interfaces


def official_code() -> ModuleType:
    """``_official``, imported with ``acp`` being acp_fast.compat."""
    _alias()
    from . import _official

    _official.PEER = "compat"
    return _official


def core() -> str:
    from acp_fast._core import IMPLEMENTATION

    return IMPLEMENTATION


def run_peer() -> None:
    official_code().run_peer()


def codec_costs() -> dict[str, float]:
    """What compat costs per notification: the typed decode plus the
    conversion to official-style objects; the encode of one such object."""
    from acp_fast._async._wire import encode_notification
    from acp_fast.compat._models import to_compat
    from acp_fast.schema import decode, v1

    from ._common import CHUNK_PARAMS, best_per_call

    def decode_chunk() -> Any:
        return to_compat(decode(v1.SessionNotification, CHUNK_PARAMS))

    message = decode_chunk()

    def encode() -> bytes:
        return encode_notification("session/update", message)

    return {"decode": best_per_call(decode_chunk), "encode": best_per_call(encode)}
