"""Short constructors for the ACP v1 messages agents and clients build most.

::

    from acp_fast import helpers as h

    await self.client.session_update(sid, h.agent_text("Reading the file..."))
    await self.client.session_update(sid, h.tool_call("call-1", "Edit main.py", kind="edit"))
    reply = await self.client.request_permission(sid, h.tool_call_ref("call-1"), h.allow_or_reject())
    if h.selected_option(reply) == "allow":
        ...
    await self.client.session_update(
        sid, h.tool_call_update("call-1", status="completed", content=[h.diff("main.py", new, old)])
    )

Every function returns the generated ``acp_fast.schema.v1`` object, so the
result is as typed as if it were built by hand; fields left out stay out of
the JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import UNSET

from .schema import v1

__all__ = (
    "agent_message",
    "agent_text",
    "agent_thought",
    "agent_thought_block",
    "allow_or_reject",
    "audio",
    "available_commands",
    "command",
    "config_options_update",
    "current_mode",
    "diff",
    "embedded_blob",
    "embedded_text",
    "image",
    "permission_cancelled",
    "permission_option",
    "permission_selected",
    "plan",
    "plan_entry",
    "resource_link",
    "selected_option",
    "session_info",
    "terminal_content",
    "text",
    "text_content",
    "tool_call",
    "tool_call_ref",
    "tool_call_update",
    "usage",
    "user_message",
    "user_text",
)


# --- content blocks -------------------------------------------------------------


def text(value: str) -> v1.ContentBlockText:
    """A text content block."""
    return v1.ContentBlockText(text=value)


def resource_link(
    uri: str, name: str, *, mime_type: str | None = None
) -> v1.ContentBlockResourceLink:
    """A link to a resource (a file, a URL) the agent can read."""
    block = v1.ContentBlockResourceLink(uri=uri, name=name)
    if mime_type is not None:
        block.mime_type = mime_type
    return block


# --- session/update variants -------------------------------------------------------


def agent_text(value: str) -> v1.SessionUpdateAgentMessageChunk:
    """A chunk of the agent's reply."""
    return v1.SessionUpdateAgentMessageChunk(content=text(value))


def agent_thought(value: str) -> v1.SessionUpdateAgentThoughtChunk:
    """A chunk of the agent's reasoning."""
    return v1.SessionUpdateAgentThoughtChunk(content=text(value))


def user_text(value: str) -> v1.SessionUpdateUserMessageChunk:
    """A chunk of the user's message (replaying history)."""
    return v1.SessionUpdateUserMessageChunk(content=text(value))


def tool_call(
    tool_call_id: str,
    title: str,
    *,
    kind: v1.ToolKind | None = None,
    status: v1.ToolCallStatus = "pending",
    content: Sequence[v1.ToolCallContent] | None = None,
    locations: Iterable[str | v1.ToolCallLocation] | None = None,
    raw_input: Any = UNSET,
) -> v1.SessionUpdateToolCall:
    """A new tool call the agent is about to make."""
    update = v1.SessionUpdateToolCall(tool_call_id=tool_call_id, title=title, status=status)
    if kind is not None:
        update.kind = kind
    if content is not None:
        update.content = list(content)
    if locations is not None:
        update.locations = [_location(item) for item in locations]
    if raw_input is not UNSET:
        update.raw_input = raw_input
    return update


def tool_call_update(
    tool_call_id: str,
    *,
    status: v1.ToolCallStatus | None = None,
    title: str | None = None,
    content: Sequence[v1.ToolCallContent] | None = None,
    locations: Iterable[str | v1.ToolCallLocation] | None = None,
    raw_output: Any = UNSET,
) -> v1.SessionUpdateToolCallUpdate:
    """Progress of a tool call: only the fields given change."""
    update = v1.SessionUpdateToolCallUpdate(tool_call_id=tool_call_id)
    if status is not None:
        update.status = status
    if title is not None:
        update.title = title
    if content is not None:
        update.content = list(content)
    if locations is not None:
        update.locations = [_location(item) for item in locations]
    if raw_output is not UNSET:
        update.raw_output = raw_output
    return update


def tool_call_ref(tool_call_id: str, **fields: Any) -> v1.ToolCallUpdate:
    """The tool call a permission request is about (its id, plus any fields)."""
    return v1.ToolCallUpdate(tool_call_id=tool_call_id, **fields)


def text_content(value: str) -> v1.ToolCallContentContent:
    """Text produced by a tool call."""
    return v1.ToolCallContentContent(content=text(value))


def diff(path: str, new_text: str, old_text: str | None = None) -> v1.ToolCallContentDiff:
    """A file change made by a tool call (no ``old_text``: a new file)."""
    change = v1.ToolCallContentDiff(path=path, new_text=new_text)
    if old_text is not None:
        change.old_text = old_text
    return change


def terminal_content(terminal_id: str) -> v1.ToolCallContentTerminal:
    """Embed a terminal (from ``create_terminal``) in a tool call."""
    return v1.ToolCallContentTerminal(terminal_id=terminal_id)


def plan_entry(
    content: str,
    *,
    priority: v1.PlanEntryPriority = "medium",
    status: v1.PlanEntryStatus = "pending",
) -> v1.PlanEntry:
    return v1.PlanEntry(content=content, priority=priority, status=status)


def plan(entries: Iterable[str | v1.PlanEntry]) -> v1.SessionUpdatePlan:
    """The agent's plan (every update replaces the whole plan)."""
    return v1.SessionUpdatePlan(
        entries=[plan_entry(e) if isinstance(e, str) else e for e in entries]
    )


# --- permissions -------------------------------------------------------------------


def permission_option(
    option_id: str, name: str, kind: v1.PermissionOptionKind
) -> v1.PermissionOption:
    return v1.PermissionOption(option_id=option_id, name=name, kind=kind)


def allow_or_reject(*, always: bool = False) -> list[v1.PermissionOption]:
    """The usual choices: ``allow`` and ``reject`` (once, or always)."""
    suffix = "always" if always else "once"
    return [
        permission_option("allow", "Allow", f"allow_{suffix}"),  # type: ignore[arg-type]
        permission_option("reject", "Reject", f"reject_{suffix}"),  # type: ignore[arg-type]
    ]


def permission_selected(option_id: str) -> v1.RequestPermissionResponse:
    """A client's answer: the user picked ``option_id``."""
    return v1.RequestPermissionResponse(
        outcome=v1.RequestPermissionOutcomeSelected(option_id=option_id)
    )


def permission_cancelled() -> v1.RequestPermissionResponse:
    """A client's answer when the turn was cancelled."""
    return v1.RequestPermissionResponse(outcome=v1.RequestPermissionOutcomeCancelled())


def selected_option(response: v1.RequestPermissionResponse) -> str | None:
    """The option the user picked, or None if the request was cancelled."""
    outcome = response.outcome
    if isinstance(outcome, v1.RequestPermissionOutcomeSelected):
        return outcome.option_id
    return None


def _location(item: str | v1.ToolCallLocation) -> v1.ToolCallLocation:
    return v1.ToolCallLocation(path=item) if isinstance(item, str) else item


# --- the other content blocks and update kinds --------------------------------------


def image(data: str, mime_type: str, *, uri: str | None = None) -> v1.ContentBlockImage:
    """An image block: base64 ``data`` of type ``mime_type``."""
    block = v1.ContentBlockImage(data=data, mime_type=mime_type)
    if uri is not None:
        block.uri = uri
    return block


def audio(data: str, mime_type: str) -> v1.ContentBlockAudio:
    """An audio block: base64 ``data`` of type ``mime_type``."""
    return v1.ContentBlockAudio(data=data, mime_type=mime_type)


def embedded_text(uri: str, text: str, *, mime_type: str | None = None) -> v1.ContentBlockResource:
    """A resource embedded with its text (a file's contents, say)."""
    contents = v1.TextResourceContents(uri=uri, text=text)
    if mime_type is not None:
        contents.mime_type = mime_type
    return v1.ContentBlockResource(resource=contents)


def embedded_blob(uri: str, blob: str, *, mime_type: str | None = None) -> v1.ContentBlockResource:
    """A resource embedded as base64 ``blob``."""
    contents = v1.BlobResourceContents(uri=uri, blob=blob)
    if mime_type is not None:
        contents.mime_type = mime_type
    return v1.ContentBlockResource(resource=contents)


def agent_message(block: v1.ContentBlock) -> v1.SessionUpdateAgentMessageChunk:
    """A chunk of the agent's reply holding any content block."""
    return v1.SessionUpdateAgentMessageChunk(content=block)


def user_message(block: v1.ContentBlock) -> v1.SessionUpdateUserMessageChunk:
    """A chunk of the user's message (replayed by ``session/load``)."""
    return v1.SessionUpdateUserMessageChunk(content=block)


def agent_thought_block(block: v1.ContentBlock) -> v1.SessionUpdateAgentThoughtChunk:
    """A chunk of the agent's reasoning holding any content block."""
    return v1.SessionUpdateAgentThoughtChunk(content=block)


def command(name: str, description: str, *, hint: str | None = None) -> v1.AvailableCommand:
    """A slash command; ``hint`` describes its free-text input, if it takes one."""
    item = v1.AvailableCommand(name=name, description=description)
    if hint is not None:
        item.input = v1.UnstructuredCommandInput(hint=hint)
    return item


def available_commands(
    commands: Iterable[v1.AvailableCommand],
) -> v1.SessionUpdateAvailableCommandsUpdate:
    """The commands the session offers now (replaces the previous list)."""
    return v1.SessionUpdateAvailableCommandsUpdate(available_commands=list(commands))


def current_mode(mode_id: str) -> v1.SessionUpdateCurrentModeUpdate:
    """The session switched to mode ``mode_id``."""
    return v1.SessionUpdateCurrentModeUpdate(current_mode_id=mode_id)


def config_options_update(
    options: Iterable[v1.SessionConfigOption],
) -> v1.SessionUpdateConfigOptionUpdate:
    """The session's config options, as they are now."""
    return v1.SessionUpdateConfigOptionUpdate(config_options=list(options))


def session_info(
    *, title: str | None = None, updated_at: str | None = None
) -> v1.SessionUpdateSessionInfoUpdate:
    """New session metadata (a title, a last-update time)."""
    update = v1.SessionUpdateSessionInfoUpdate()
    if title is not None:
        update.title = title
    if updated_at is not None:
        update.updated_at = updated_at
    return update


def usage(
    used: int, size: int, *, cost: float | None = None, currency: str = "USD"
) -> v1.SessionUpdateUsageUpdate:
    """Context-window usage: ``used`` of ``size`` tokens (and the cost so far)."""
    update = v1.SessionUpdateUsageUpdate(used=used, size=size)
    if cost is not None:
        update.cost = v1.Cost(amount=cost, currency=currency)
    return update
