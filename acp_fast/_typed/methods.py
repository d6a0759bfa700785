"""Which Python method of a class-based agent or client handles which wire method.

The generated schema modules say which types a wire method carries
(``METHODS``); this table adds the Python names users write, chosen to read
naturally and to match what users of the official Python SDK already know.
A test checks that every v1 method of each side has exactly one entry.
"""

from __future__ import annotations

from typing import Final

__all__ = (
    "V1_AGENT_METHODS",
    "V1_CLIENT_METHODS",
    "V1_UNSTABLE_AGENT_METHODS",
    "V1_UNSTABLE_CLIENT_METHODS",
    "V2_AGENT_METHODS",
    "V2_CLIENT_METHODS",
)

# Handled by the agent (sent by the client): wire method -> Python method.
V1_AGENT_METHODS: Final = {
    "initialize": "initialize",
    "authenticate": "authenticate",
    "logout": "logout",
    "session/new": "new_session",
    "session/load": "load_session",
    "session/list": "list_sessions",
    "session/delete": "delete_session",
    "session/resume": "resume_session",
    "session/close": "close_session",
    "session/set_mode": "set_session_mode",
    "session/set_config_option": "set_session_config_option",
    "session/prompt": "prompt",
    "session/cancel": "cancel",
}

# Handled by the client (sent by the agent).
V1_CLIENT_METHODS: Final = {
    "session/request_permission": "request_permission",
    "session/update": "session_update",
    "fs/read_text_file": "read_text_file",
    "fs/write_text_file": "write_text_file",
    "terminal/create": "create_terminal",
    "terminal/output": "terminal_output",
    "terminal/release": "release_terminal",
    "terminal/wait_for_exit": "wait_for_terminal_exit",
    "terminal/kill": "kill_terminal",
    "elicitation/create": "create_elicitation",
    "elicitation/complete": "complete_elicitation",
}

V2_AGENT_METHODS: Final = {
    "initialize": "initialize",
    "auth/login": "login",
    "auth/logout": "logout",
    "session/new": "new_session",
    "session/list": "list_sessions",
    "session/delete": "delete_session",
    "session/resume": "resume_session",
    "session/close": "close_session",
    "session/set_config_option": "set_session_config_option",
    "session/prompt": "prompt",
    "session/cancel": "cancel",
}

V2_CLIENT_METHODS: Final = {
    "session/request_permission": "request_permission",
    "session/update": "session_update",
    "elicitation/create": "create_elicitation",
    "elicitation/complete": "complete_elicitation",
}

# Draft methods (schema ``v1_unstable``), routed only for a class that opts in
# with ``unstable = True``; its messages then decode to ``v1_unstable`` types.
V1_UNSTABLE_AGENT_METHODS: Final = {
    **V1_AGENT_METHODS,
    "session/fork": "fork_session",
    "providers/list": "list_providers",
    "providers/set": "set_provider",
    "providers/disable": "disable_provider",
    "nes/start": "start_nes",
    "nes/suggest": "suggest_nes",
    "nes/accept": "accept_nes",
    "nes/reject": "reject_nes",
    "nes/close": "close_nes",
    "document/didOpen": "did_open_document",
    "document/didChange": "did_change_document",
    "document/didClose": "did_close_document",
    "document/didSave": "did_save_document",
    "document/didFocus": "did_focus_document",
    "mcp/message": "mcp_message",
}

V1_UNSTABLE_CLIENT_METHODS: Final = {
    **V1_CLIENT_METHODS,
    "mcp/connect": "connect_mcp",
    "mcp/disconnect": "disconnect_mcp",
    "mcp/message": "mcp_message",
}
