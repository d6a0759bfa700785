"""What an agent's ``session_update`` accepts, checked before anything is sent.

The encoder writes whatever it is given, so ``session_update(sid, "hello")``
would reach the client as ``"update": "hello"`` and fail there, far from the
mistake. The check costs one set lookup per update (the update's exact type);
only a value that fails it gets the slower look: a subclass of an update, or
a dict (sent as it is, as before; v2's ``UnknownVariant`` is one), passes.
"""

from __future__ import annotations

import typing
from typing import Any

__all__ = ("UpdateCheck",)


class UpdateCheck:
    """The session updates of one protocol version (``schema``: ``"v1"``, ``"v2"``)."""

    __slots__ = ("_schema", "_tuple", "types")

    def __init__(self, union: Any, schema: str) -> None:
        if typing.get_origin(union) is typing.Annotated:  # v2's open unions
            union = typing.get_args(union)[0]
        self._tuple: tuple[type, ...] = typing.get_args(union)
        self.types = frozenset(self._tuple)
        self._schema = schema

    def refuse(self, session_id: Any, update: Any) -> None:
        """Raise ``TypeError`` unless the arguments can be sent (called when
        ``type(update)`` is not in ``types`` or the id is not a str)."""
        if not isinstance(session_id, str):
            raise TypeError(
                "session_update(session_id, update) wants the session id (a str) first, "
                f"not {_shown(session_id)}"
            )
        if isinstance(update, (self._tuple, dict)):
            return
        schema = self._schema
        if type(update).__name__.startswith("ContentBlock"):
            raise TypeError(
                f"session_update() wants a session update, not a content block "
                f"({schema}.{type(update).__name__}): wrap it, e.g. "
                f"{schema}.SessionUpdateAgentMessageChunk(content=block)"
            )
        raise TypeError(
            f"session_update() wants a {schema}.SessionUpdate (e.g. "
            f"{schema}.SessionUpdateAgentMessageChunk, {schema}.SessionUpdateToolCall), "
            f"not {_shown(update)}"
        )


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"
