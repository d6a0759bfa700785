"""``ToolCallTracker``: an agent's tool calls, without hand-built updates.

::

    tools = ToolCallTracker(self.client, request.session_id)
    call = await tools.start("Read config.json", kind="read", locations=["config.json"])
    reply = await self.client.request_permission(sid, call.ref(), h.allow_or_reject())
    await call.update(status="in_progress")
    await call.complete(content=[h.text_content("3 keys")])

    async with tools.run("Run tests", kind="execute") as call:   # completed,
        ...                                                     # or failed on error
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from msgspec import UNSET

from .. import helpers as h
from .._typed.agent import ClientConnection
from ..schema import v1

__all__ = ("ToolCallTracker", "TrackedToolCall")


class TrackedToolCall:
    """One tool call of a ``ToolCallTracker``; its ``status`` is the last one sent."""

    def __init__(self, tracker: ToolCallTracker, tool_call_id: str, title: str, kind: Any) -> None:
        self.tracker = tracker
        self.id = tool_call_id
        self.title = title
        self.kind = kind
        self.status: v1.ToolCallStatus = "pending"

    def ref(self) -> v1.ToolCallUpdate:
        """The call as ``request_permission`` names it."""
        ref = h.tool_call_ref(self.id, title=self.title, status=self.status)
        if self.kind is not None:
            ref.kind = self.kind
        return ref

    async def update(
        self,
        *,
        status: v1.ToolCallStatus | None = None,
        title: str | None = None,
        content: Sequence[v1.ToolCallContent] | None = None,
        locations: Iterable[str | v1.ToolCallLocation] | None = None,
        raw_output: Any = UNSET,
    ) -> None:
        """Send a ``tool_call_update`` with only the fields given."""
        if status is not None:
            self.status = status
        if title is not None:
            self.title = title
        await self.tracker.client.session_update(
            self.tracker.session_id,
            h.tool_call_update(
                self.id,
                status=status,
                title=title,
                content=content,
                locations=locations,
                raw_output=raw_output,
            ),
        )

    async def complete(
        self, *, content: Sequence[v1.ToolCallContent] | None = None, raw_output: Any = UNSET
    ) -> None:
        await self.update(status="completed", content=content, raw_output=raw_output)

    async def fail(
        self, *, content: Sequence[v1.ToolCallContent] | None = None, raw_output: Any = UNSET
    ) -> None:
        await self.update(status="failed", content=content, raw_output=raw_output)


class ToolCallTracker:
    """Starts tool calls in one session; ids are made unique per tracker."""

    def __init__(self, client: ClientConnection, session_id: str, *, prefix: str = "call") -> None:
        self.client = client
        self.session_id = session_id
        self.prefix = prefix
        self.calls: dict[str, TrackedToolCall] = {}
        self._ids = itertools.count(1)

    async def start(
        self,
        title: str,
        *,
        kind: v1.ToolKind | None = None,
        tool_call_id: str | None = None,
        content: Sequence[v1.ToolCallContent] | None = None,
        locations: Iterable[str | v1.ToolCallLocation] | None = None,
        raw_input: Any = UNSET,
    ) -> TrackedToolCall:
        """Announce a new tool call (status ``pending``)."""
        call_id = tool_call_id if tool_call_id is not None else f"{self.prefix}-{next(self._ids)}"
        call = self.calls[call_id] = TrackedToolCall(self, call_id, title, kind)
        await self.client.session_update(
            self.session_id,
            h.tool_call(
                call_id,
                title,
                kind=kind,
                content=content,
                locations=locations,
                raw_input=raw_input,
            ),
        )
        return call

    @asynccontextmanager
    async def run(
        self, title: str, *, kind: v1.ToolKind | None = None, raw_input: Any = UNSET
    ) -> AsyncIterator[TrackedToolCall]:
        """A tool call for the block: ``in_progress`` inside, ``completed`` after,
        ``failed`` if the block raises (the error propagates)."""
        call = await self.start(title, kind=kind, raw_input=raw_input)
        await call.update(status="in_progress")
        try:
            yield call
        except Exception as exc:
            await call.fail(content=[h.text_content(f"{type(exc).__name__}: {exc}")])
            raise
        if call.status not in ("completed", "failed"):
            await call.complete()
