"""What an agent's ``session_update`` accepts, checked before anything is sent.

The encoder writes whatever it is given, so ``session_update(sid, "hello")``
would reach the client as ``"update": "hello"`` and fail there, far from the
mistake. The check costs one set lookup per update (the update's exact type);
only a value that fails it gets the slower look, which passes: a subclass of
an update, the same version's unstable update classes (an agent with
``unstable = True`` decodes to them and may send them), for v1 the compat
layer's models (they carry ``session_update``), and a dict (sent as it is,
as before; v2's ``UnknownVariant`` is one).
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

import msgspec

__all__ = ("UpdateCheck",)


def _members(union: Any) -> tuple[type, ...]:
    if typing.get_origin(union) is typing.Annotated:  # v2's open unions
        union = typing.get_args(union)[0]
    return typing.get_args(union)


class UpdateCheck:
    """The session updates of one protocol version (``schema``: ``"v1"``, ``"v2"``)."""

    __slots__ = ("_compat", "_schema", "_tuple", "types")

    def __init__(self, union: Any, schema: str, *, compat: bool = False) -> None:
        self._tuple: tuple[type, ...] | None = None  # with the unstable ones, on first need
        self.types = frozenset(_members(union))
        self._schema = schema
        self._compat = compat

    def refuse(self, session_id: Any, update: Any) -> None:
        """Raise ``TypeError`` unless the arguments can be sent (called when
        ``type(update)`` is not in ``types`` or the id is not a str)."""
        if not isinstance(session_id, str):
            raise TypeError(
                "session_update(session_id, update) wants the session id (a str) first, "
                f"not {_shown(session_id)}"
            )
        if self._tuple is None:
            unstable = importlib.import_module(f"acp_fast.schema.{self._schema}_unstable")
            self._tuple = (*self.types, *_members(unstable.SessionUpdate))
        if isinstance(update, (self._tuple, dict)):
            return
        if (
            self._compat
            and isinstance(update, msgspec.Struct)
            and isinstance(getattr(update, "session_update", None), str)
        ):
            return
        schema = self._schema
        kind = type(update)
        if kind.__name__.startswith("ContentBlock") or (
            isinstance(update, msgspec.Struct) and kind.__name__.endswith("ContentBlock")
        ):
            module = kind.__module__.rsplit(".", 1)[-1]
            raise TypeError(
                f"session_update() wants a session update, not a content block "
                f"({module}.{kind.__name__}): wrap it, e.g. "
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
