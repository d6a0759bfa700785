"""What the remote transports agree on: headers, session scoping, SSE events.

Shared by the server (acp_fast.http) and the clients (``HttpTransport``,
``WebSocketTransport``); docs/remote.md describes the protocol.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = (
    "CONNECTION_HEADER",
    "SESSION_CREATING_METHODS",
    "SESSION_HEADER",
    "SESSION_METHODS",
    "SseParser",
    "message_session",
    "sse_event",
)

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"

# Methods a client sends that belong to one session: over HTTP they need the
# session header or ``params.sessionId``.
SESSION_METHODS = frozenset(
    {
        "session/prompt",
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)
# Requests whose result names a session the client then listens to.
SESSION_CREATING_METHODS = frozenset(
    {"session/new", "session/fork", "session/load", "session/resume"}
)


def decode(body: bytes) -> Any:
    """The JSON value of ``body``, or ``None`` when it is not JSON."""
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None


def message_session(message: Any) -> str | None:
    """The session a request or notification belongs to, if any.

    Connection-scoped methods (``$/...``, including ``$/cancel_request``)
    never belong to a session, whatever their params say.
    """
    if not isinstance(message, dict):
        return None
    method = message.get("method")
    if not isinstance(method, str) or method.startswith("$/"):
        return None
    params = message.get("params")
    if isinstance(params, dict):
        session = params.get("sessionId")
        if isinstance(session, str):
            return session
    return None


def is_response(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and "id" in message
        and ("result" in message or "error" in message)
    )


def id_key(value: Any) -> tuple[str, Any]:
    """A dict key for a JSON-RPC id that never aliases ``1``, ``1.0`` and ``true``."""
    return (type(value).__name__, value)


def sse_event(data: bytes) -> bytes:
    """One Server-Sent Event carrying one single-line JSON message."""
    return b"data: " + data + b"\n\n"


class SseParser:
    """A sans-IO reader of ``text/event-stream``: feed bytes, get data fields.

    Only what ACP uses: each event's ``data`` (several ``data:`` lines are
    joined with newlines); comments (keep-alives), ``event``, ``id`` and
    ``retry`` fields and events without data are skipped. ``max_event``
    bounds one event's size.
    """

    def __init__(self, max_event: int = 64 * 1024 * 1024) -> None:
        self._buffer = b""
        self._max_event = max_event

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buffer:
            # A CR at the very end may be the first half of a CRLF.
            held = buffer.endswith(b"\r")
            if held:
                buffer = buffer[:-1]
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if held:
                buffer += b"\r"
        blocks = buffer.split(b"\n\n")
        self._buffer = blocks.pop()  # the event still arriving
        if len(self._buffer) > self._max_event:
            raise ValueError(f"an event exceeds {self._max_event} bytes")
        events: list[bytes] = []
        for block in blocks:
            data: bytes | None
            if block.startswith(b"data: ") and b"\n" not in block:
                data = block[6:]  # the usual event: one data line
            else:
                data = self._parse(block)
            if data is None:
                continue
            if len(data) > self._max_event:
                raise ValueError(f"an event exceeds {self._max_event} bytes")
            events.append(data)
        return events

    @staticmethod
    def _parse(block: bytes) -> bytes | None:
        lines = []
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                value = line[5:]
                lines.append(value[1:] if value.startswith(b" ") else value)
            # Other fields and comments carry nothing ACP needs.
        return b"\n".join(lines) if lines else None
