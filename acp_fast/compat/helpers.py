"""The official SDK's helper functions (``acp.helpers``), building compat models."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._models import CLASSES as _S

__all__ = (
    "audio_block",
    "embedded_blob_resource",
    "embedded_text_resource",
    "image_block",
    "plan_entry",
    "resource_block",
    "resource_link_block",
    "session_notification",
    "start_edit_tool_call",
    "start_read_tool_call",
    "start_tool_call",
    "text_block",
    "tool_content",
    "tool_diff_content",
    "tool_terminal_ref",
    "update_agent_message",
    "update_agent_message_text",
    "update_agent_thought",
    "update_agent_thought_text",
    "update_available_commands",
    "update_current_mode",
    "update_plan",
    "update_tool_call",
    "update_user_message",
    "update_user_message_text",
)


def text_block(text: str) -> Any:
    return _S["TextContentBlock"](text=text)


def image_block(data: str, mime_type: str, *, uri: str | None = None) -> Any:
    return _S["ImageContentBlock"](data=data, mime_type=mime_type, uri=uri)


def audio_block(data: str, mime_type: str) -> Any:
    return _S["AudioContentBlock"](data=data, mime_type=mime_type)


def resource_link_block(
    name: str,
    uri: str,
    *,
    mime_type: str | None = None,
    size: int | None = None,
    description: str | None = None,
    title: str | None = None,
) -> Any:
    return _S["ResourceContentBlock"](
        name=name, uri=uri, mime_type=mime_type, size=size, description=description, title=title
    )


def embedded_text_resource(uri: str, text: str, *, mime_type: str | None = None) -> Any:
    return _S["TextResourceContents"](uri=uri, text=text, mime_type=mime_type)


def embedded_blob_resource(uri: str, blob: str, *, mime_type: str | None = None) -> Any:
    return _S["BlobResourceContents"](uri=uri, blob=blob, mime_type=mime_type)


def resource_block(resource: Any) -> Any:
    return _S["EmbeddedResourceContentBlock"](resource=resource)


def tool_content(block: Any) -> Any:
    return _S["ContentToolCallContent"](content=block)


def tool_diff_content(path: str, new_text: str, old_text: str | None = None) -> Any:
    return _S["FileEditToolCallContent"](path=path, new_text=new_text, old_text=old_text)


def tool_terminal_ref(terminal_id: str) -> Any:
    return _S["TerminalToolCallContent"](terminal_id=terminal_id)


def plan_entry(content: str, *, priority: str = "medium", status: str = "pending") -> Any:
    return _S["PlanEntry"](content=content, priority=priority, status=status)


def update_plan(entries: Iterable[Any]) -> Any:
    return _S["AgentPlanUpdate"](entries=list(entries))


def update_user_message(content: Any) -> Any:
    return _S["UserMessageChunk"](content=content)


def update_user_message_text(text: str) -> Any:
    return update_user_message(text_block(text))


def update_agent_message(content: Any) -> Any:
    return _S["AgentMessageChunk"](content=content)


def update_agent_message_text(text: str) -> Any:
    return update_agent_message(text_block(text))


def update_agent_thought(content: Any) -> Any:
    return _S["AgentThoughtChunk"](content=content)


def update_agent_thought_text(text: str) -> Any:
    return update_agent_thought(text_block(text))


def update_available_commands(commands: Iterable[Any]) -> Any:
    return _S["AvailableCommandsUpdate"](available_commands=list(commands))


def update_current_mode(current_mode_id: str) -> Any:
    return _S["CurrentModeUpdate"](current_mode_id=current_mode_id)


def session_notification(session_id: str, update: Any) -> Any:
    return _S["SessionNotification"](session_id=session_id, update=update)


def start_tool_call(
    tool_call_id: str,
    title: str,
    *,
    kind: str | None = None,
    status: str | None = None,
    content: Sequence[Any] | None = None,
    locations: Sequence[Any] | None = None,
    raw_input: Any | None = None,
    raw_output: Any | None = None,
) -> Any:
    return _S["ToolCallStart"](
        tool_call_id=tool_call_id,
        title=title,
        kind=kind,
        status=status,
        content=list(content) if content is not None else None,
        locations=list(locations) if locations is not None else None,
        raw_input=raw_input,
        raw_output=raw_output,
    )


def start_read_tool_call(
    tool_call_id: str, title: str, path: str, *, extra_options: Sequence[Any] | None = None
) -> Any:
    return start_tool_call(
        tool_call_id,
        title,
        kind="read",
        status="pending",
        content=extra_options,
        locations=[_S["ToolCallLocation"](path=path)],
        raw_input={"path": path},
    )


def start_edit_tool_call(
    tool_call_id: str,
    title: str,
    path: str,
    content: Any,
    *,
    extra_options: Sequence[Any] | None = None,
) -> Any:
    return start_tool_call(
        tool_call_id,
        title,
        kind="edit",
        status="pending",
        content=extra_options,
        locations=[_S["ToolCallLocation"](path=path)],
        raw_input={"path": path, "content": content},
    )


def update_tool_call(
    tool_call_id: str,
    *,
    title: str | None = None,
    kind: str | None = None,
    status: str | None = None,
    content: Sequence[Any] | None = None,
    locations: Sequence[Any] | None = None,
    raw_input: Any | None = None,
    raw_output: Any | None = None,
) -> Any:
    return _S["ToolCallProgress"](
        tool_call_id=tool_call_id,
        title=title,
        kind=kind,
        status=status,
        content=list(content) if content is not None else None,
        locations=list(locations) if locations is not None else None,
        raw_input=raw_input,
        raw_output=raw_output,
    )
