"""What the remote transports agree on: headers, session scoping, SSE events.

Shared by the server (acp_fast.http) and the clients (``HttpTransport``,
``WebSocketTransport``); docs/remote.md describes the protocol.
"""

from __future__ import annotations

from typing import Any

import orjson

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
        return orjson.loads(body)
    except orjson.JSONDecodeError:
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
        self._data: list[bytes] = []
        self._size = 0
        self._max_event = max_event

    def feed(self, chunk: bytes) -> list[bytes]:
        events: list[bytes] = []
        buffer = self._buffer + chunk if self._buffer else chunk
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                self._data, self._size = [], 0
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                if value.startswith(b" "):
                    value = value[1:]
                self._size += len(value)
                if self._size > self._max_event:
                    raise ValueError(f"an event exceeds {self._max_event} bytes")
                self._data.append(value)
            # Other fields and comments carry nothing ACP needs.
        self._buffer = buffer[start:]
        if len(self._buffer) > self._max_event:
            raise ValueError(f"an event exceeds {self._max_event} bytes")
        return events
