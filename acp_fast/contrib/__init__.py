"""Conveniences on top of the class API (protocol v1).

* ``SessionAccumulator`` (client side): folds a session's ``session/update``
  stream into its current state: messages, thoughts, tool calls with their
  latest status and content, plan, mode, commands.
* ``ToolCallTracker`` (agent side): start, update, complete and fail tool
  calls without assembling the updates by hand.
* ``PermissionBroker`` (client side): answers ``session/request_permission``
  from a policy, remembered "always" choices, or by asking the user; pending
  questions end with the cancelled outcome when the turn is cancelled.
"""

from __future__ import annotations

from .permissions import PermissionBroker as PermissionBroker
from .session_state import Message as Message
from .session_state import SessionAccumulator as SessionAccumulator
from .session_state import SessionState as SessionState
from .session_state import ToolCallState as ToolCallState
from .tool_calls import ToolCallTracker as ToolCallTracker
from .tool_calls import TrackedToolCall as TrackedToolCall

__all__ = (
    "Message",
    "PermissionBroker",
    "SessionAccumulator",
    "SessionState",
    "ToolCallState",
    "ToolCallTracker",
    "TrackedToolCall",
)
