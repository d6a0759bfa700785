"""``Agent`` and ``Client``: the official SDK's handler interfaces.

Subclassing is optional (any object with the methods works, as with the
official SDK); a method that is neither defined nor inherited from a class
other than these answers -32601, never a silent ``null``.
"""

from __future__ import annotations

from typing import Any

__all__ = ("Agent", "Client")


class Client:
    """What an agent calls on its client; write a client by overriding these.

    Each method receives the request's fields as keyword arguments (``_meta``
    entries too, as extra keywords) and returns the response model.
    """

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any: ...
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None: ...
    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> Any: ...
    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any: ...
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any: ...
    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...
    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...
    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> Any: ...
    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...
    async def ext_method(self, method: str, params: dict[str, Any]) -> Any: ...
    async def ext_notification(self, method: str, params: dict[str, Any]) -> None: ...
    def on_connect(self, conn: Any) -> None: ...


class Agent:
    """What a client calls on its agent; write an agent by overriding these."""

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any | None = None,
        client_info: Any | None = None,
        **kwargs: Any,
    ) -> Any: ...
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> Any: ...
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> Any: ...
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> Any: ...
    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any: ...
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> Any: ...
    async def authenticate(self, method_id: str, **kwargs: Any) -> Any: ...
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any: ...
    async def fork_session(self, session_id: str, cwd: str, **kwargs: Any) -> Any: ...
    async def resume_session(self, session_id: str, cwd: str, **kwargs: Any) -> Any: ...
    async def close_session(self, session_id: str, **kwargs: Any) -> Any: ...
    async def cancel(self, session_id: str, **kwargs: Any) -> None: ...
    async def ext_method(self, method: str, params: dict[str, Any]) -> Any: ...
    async def ext_notification(self, method: str, params: dict[str, Any]) -> None: ...
    def on_connect(self, conn: Any) -> None: ...


def implemented(instance: object, base: type, name: str) -> bool:
    """True when ``instance`` has its own ``name`` (not the empty one of ``base``)."""
    method = getattr(type(instance), name, None)
    if method is None:
        return callable(getattr(instance, name, None))
    return method is not getattr(base, name, None)
