"""``SessionAccumulator``: a session's ``session/update`` stream, folded into state.

::

    sessions = SessionAccumulator()

    class Editor(acp.BaseClient):
        async def session_update(self, notification):
            state = sessions.apply(notification)
            print(state.agent_text(), [t.status for t in state.tool_calls.values()])

Each update changes the state the way the protocol defines it: message and
thought chunks append (consecutive chunks of one speaker, or of one
``message_id``, form one message), a ``tool_call`` starts a call and a
``tool_call_update`` changes only the fields it carries (``content`` and
``locations`` replace the previous lists), a plan replaces the plan, and
the mode, commands, config options, title and usage keep their latest value.
Update kinds this schema version does not know are counted, not lost
silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from msgspec import UNSET

from ..schema import v1

__all__ = ("Message", "SessionAccumulator", "SessionState", "ToolCallState")

Speaker = Literal["user", "agent"]


@dataclass
class Message:
    """One message of the conversation: its content blocks, in order."""

    role: Speaker
    content: list[v1.ContentBlock] = field(default_factory=list)
    message_id: str | None = None

    def text(self) -> str:
        """The text of its text blocks, joined."""
        return "".join(b.text for b in self.content if isinstance(b, v1.ContentBlockText))


@dataclass
class ToolCallState:
    """A tool call as its latest updates leave it."""

    tool_call_id: str
    title: str = ""
    kind: str | None = None
    status: str = "pending"
    content: list[v1.ToolCallContent] = field(default_factory=list)
    locations: list[v1.ToolCallLocation] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None


@dataclass
class SessionState:
    """Everything the updates of one session said, so far."""

    session_id: str
    messages: list[Message] = field(default_factory=list)
    thoughts: list[Message] = field(default_factory=list)
    tool_calls: dict[str, ToolCallState] = field(default_factory=dict)
    plan: list[v1.PlanEntry] = field(default_factory=list)
    current_mode_id: str | None = None
    available_commands: list[v1.AvailableCommand] = field(default_factory=list)
    config_options: list[Any] = field(default_factory=list)
    title: str | None = None
    usage: v1.SessionUpdateUsageUpdate | None = None
    #: Updates of kinds this schema version does not know (kept, not applied).
    unknown: list[Any] = field(default_factory=list)

    def agent_text(self) -> str:
        """The text of the agent's messages, joined."""
        return "".join(m.text() for m in self.messages if m.role == "agent")


def _set(value: Any) -> bool:
    return value is not UNSET and value is not None


class SessionAccumulator:
    """The state of every session whose updates it is given."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionState] = {}

    def state(self, session_id: str) -> SessionState:
        """The state of ``session_id`` (empty if nothing was applied yet)."""
        state = self.sessions.get(session_id)
        if state is None:
            state = self.sessions[session_id] = SessionState(session_id)
        return state

    def forget(self, session_id: str) -> None:
        """Drop a session's state (closed or deleted sessions)."""
        self.sessions.pop(session_id, None)

    def apply(self, notification: v1.SessionNotification) -> SessionState:
        """Fold one ``session/update`` in; returns the session's state."""
        state = self.state(notification.session_id)
        # Any: besides the known variants, an open union may hold an
        # UnknownVariant, or a newer schema's class.
        update: Any = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            _append(state.messages, "agent", update)
        elif isinstance(update, v1.SessionUpdateUserMessageChunk):
            _append(state.messages, "user", update)
        elif isinstance(update, v1.SessionUpdateAgentThoughtChunk):
            _append(state.thoughts, "agent", update)
        elif isinstance(update, v1.SessionUpdateToolCall):
            call = state.tool_calls[update.tool_call_id] = ToolCallState(
                update.tool_call_id, title=update.title
            )
            _merge(call, update)
        elif isinstance(update, v1.SessionUpdateToolCallUpdate):
            known = state.tool_calls.get(update.tool_call_id)
            if known is None:  # an update for a call we did not see start
                known = state.tool_calls[update.tool_call_id] = ToolCallState(update.tool_call_id)
            _merge(known, update)
        elif isinstance(update, v1.SessionUpdatePlan):
            state.plan = list(update.entries)
        elif isinstance(update, v1.SessionUpdateCurrentModeUpdate):
            state.current_mode_id = update.current_mode_id
        elif isinstance(update, v1.SessionUpdateAvailableCommandsUpdate):
            state.available_commands = list(update.available_commands)
        elif isinstance(update, v1.SessionUpdateConfigOptionUpdate):
            state.config_options = list(update.config_options)
        elif isinstance(update, v1.SessionUpdateSessionInfoUpdate):
            if _set(update.title):
                state.title = update.title  # type: ignore[assignment]
        elif isinstance(update, v1.SessionUpdateUsageUpdate):
            state.usage = update
        else:
            state.unknown.append(update)
        return state


def _append(messages: list[Message], role: Speaker, chunk: Any) -> None:
    message_id = chunk.message_id if _set(chunk.message_id) else None
    last = messages[-1] if messages else None
    if last is not None and last.role == role and last.message_id == message_id:
        last.content.append(chunk.content)
    else:
        messages.append(Message(role, [chunk.content], message_id))


def _merge(call: ToolCallState, update: Any) -> None:
    for name in ("title", "kind", "status", "raw_input", "raw_output"):
        value = getattr(update, name)
        if _set(value):
            setattr(call, name, value)
    if _set(update.content):
        call.content = list(update.content)
    if _set(update.locations):
        call.locations = list(update.locations)
