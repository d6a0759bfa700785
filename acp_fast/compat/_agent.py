"""The agent side of the compatibility layer: ``run_agent`` and ``AgentSideConnection``.

An official-style agent (keyword-argument methods, ``on_connect``) is served
by acp_fast's class-based machinery (``acp_fast._typed``): the same admission
limits, ordering and cancellation. A running ``prompt`` is cancelled by the
client's ``session/cancel`` for its session and by ``$/cancel_request``
naming it; the turn then answers ``stopReason: "cancelled"`` (see
docs/cancellation.md), so an agent needs no bookkeeping of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._async.connection import ConnectionTo
from .._async.messages import UntypedMessage
from .._async.requests import SentRequest
from .._async.roles import Agent as AgentRole
from .._errors import Error
from .._transports import Transport, stdio
from .._typed.agent import AgentEndpoint, BaseAgent
from .._typed.endpoint import DEFAULT_MAX_CONCURRENT_REQUESTS, Endpoint
from .._typed.lenient import legacy_initialize
from .._typed.methods import V1_AGENT_METHODS
from ..schema import v1, v1_unstable
from . import _models
from ._kwargs import Forward, request, request_json
from ._streams import transport_for
from .interfaces import Agent, implemented


def _send(cx: ConnectionTo[Any], message: _models.CompatModel) -> SentRequest[Any]:
    # A compat model carries METHOD and RESPONSE like the generated request
    # classes, without being one of them, so only the runtime sees it typed.
    return cx.send_request(message)  # type: ignore[call-overload,no-any-return]


__all__ = ("AgentSideConnection", "run_agent", "serve_agent")

_S = _models.CLASSES

# Wire method -> (method name in acp_fast's agent machinery, official name).
_STABLE = {wire: (name, name) for wire, name in V1_AGENT_METHODS.items()}
_STABLE["session/set_config_option"] = ("set_session_config_option", "set_config_option")
_UNSTABLE = {
    "session/fork": ("fork_session", "fork_session"),
    "session/set_model": ("set_session_model", "set_session_model"),
}


class AgentSideConnection:
    """The agent's handle on its client, with the official SDK's methods.

    Given to the agent's ``on_connect``. Requests return the response model
    (``RequestError`` when the client answers an error); notifications
    return once the message is queued (they wait only when the client reads
    slowly).
    """

    def __init__(self, cx: ConnectionTo[Any]) -> None:
        self._cx = cx

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._cx.send_notification(
            _S["SessionNotification"](
                session_id=session_id, update=update, field_meta=kwargs or None
            )
        )
        await self._cx.drain()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Sequence[Any], **kwargs: Any
    ) -> Any:
        return await request(
            _send(
                self._cx,
                _S["RequestPermissionRequest"](
                    session_id=session_id,
                    tool_call=tool_call,
                    options=list(options),
                    field_meta=kwargs or None,
                ),
            )
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        return await request(
            _send(
                self._cx,
                _S["ReadTextFileRequest"](
                    session_id=session_id,
                    path=path,
                    line=line,
                    limit=limit,
                    field_meta=kwargs or None,
                ),
            )
        )

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        return await request(
            _send(
                self._cx,
                _S["WriteTextFileRequest"](
                    session_id=session_id, path=path, content=content, field_meta=kwargs or None
                ),
            )
        )

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] | None = None,
        env: Sequence[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        return await request(
            _send(
                self._cx,
                _S["CreateTerminalRequest"](
                    session_id=session_id,
                    command=command,
                    args=list(args) if args is not None else None,
                    env=list(env) if env is not None else None,
                    cwd=cwd,
                    output_byte_limit=output_byte_limit,
                    field_meta=kwargs or None,
                ),
            )
        )

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return await self._terminal("TerminalOutputRequest", session_id, terminal_id, kwargs)

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return await self._terminal("ReleaseTerminalRequest", session_id, terminal_id, kwargs)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return await self._terminal("WaitForTerminalExitRequest", session_id, terminal_id, kwargs)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return await self._terminal("KillTerminalRequest", session_id, terminal_id, kwargs)

    async def _terminal(
        self, name: str, session_id: str, terminal_id: str, meta: dict[str, Any]
    ) -> Any:
        return await request(
            _send(
                self._cx,
                _S[name](session_id=session_id, terminal_id=terminal_id, field_meta=meta or None),
            )
        )

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self._cx.send_notification(
            _S["CompleteElicitationNotification"](
                elicitation_id=elicitation_id, field_meta=kwargs or None
            )
        )
        await self._cx.drain()

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """Send the extension request ``_<method>``; its result as plain JSON."""
        return await request_json(self._cx.send_request(UntypedMessage(f"_{method}", params)))

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._cx.send_notification(UntypedMessage(f"_{method}", params))
        await self._cx.drain()

    async def close(self) -> None:
        """Nothing to do: the connection ends when the client's output does."""

    async def __aenter__(self) -> AgentSideConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def on_connect(self, conn: Any) -> None:
        pass


class _Handlers:
    """The agent's methods, as acp_fast's agent machinery calls them."""

    def __init__(self, agent: Any, table: dict[str, tuple[str, str]]) -> None:
        self.agent = agent
        self.max_concurrent_requests = getattr(
            agent, "max_concurrent_requests", DEFAULT_MAX_CONCURRENT_REQUESTS
        )
        for name, official in table.values():
            if implemented(agent, Agent, official):
                setattr(self, name, Forward(getattr(agent, official)))
        if not implemented(agent, Agent, "initialize"):
            self.initialize = self._default_initialize
        if not implemented(agent, Agent, "cancel"):
            self.cancel = self._ignore
        # Looked up once: extension methods are the per-message hot path.
        self._ext_method = agent.ext_method if implemented(agent, Agent, "ext_method") else None
        self._ext_notification = (
            agent.ext_notification if implemented(agent, Agent, "ext_notification") else None
        )

    async def _default_initialize(self, request: v1.InitializeRequest) -> Any:
        return _S["InitializeResponse"](protocol_version=1)

    async def _ignore(self, notification: Any) -> None:
        return None

    async def ext_method(self, method: str, params: Any) -> Any:
        ext_method = self._ext_method
        if ext_method is None:
            raise Error.method_not_found(method)
        # The official interface names extension methods without their "_".
        return await ext_method(method[1:], params if isinstance(params, dict) else {})

    async def ext_notification(self, method: str, params: Any) -> None:
        ext_notification = self._ext_notification
        if ext_notification is not None:
            await ext_notification(method[1:], params if isinstance(params, dict) else {})


class CompatAgentEndpoint(AgentEndpoint):
    """acp_fast's agent endpoint, serving an official-style agent."""

    def __init__(self, agent: Any, *, use_unstable_protocol: bool = False) -> None:
        table = dict(_STABLE)
        if use_unstable_protocol:
            table.update(_UNSTABLE)
        handlers = _Handlers(agent, table)
        Endpoint.__init__(
            self,
            handlers,
            BaseAgent,
            {wire: name for wire, (name, _) in table.items()},
            v1_unstable if use_unstable_protocol else v1,
            handlers.max_concurrent_requests,
        )
        self.turns = {}
        self.agent = agent
        self.connection: AgentSideConnection | None = None

    def implements(self, wire: str, name: str) -> bool:
        return wire in self.schema.METHODS and hasattr(self.instance, name)

    async def _call_ext_method(self, message: UntypedMessage) -> Any:
        # _Handlers.ext_method, inlined: one coroutine less per extension request.
        ext_method = self.instance._ext_method
        if ext_method is None:
            raise Error.method_not_found(message.method)
        params = message.params
        return await ext_method(message.method[1:], params if isinstance(params, dict) else {})

    def bind(self, cx: ConnectionTo[Any]) -> None:
        Endpoint.bind(self, cx)
        if self.connection is None:
            self.connection = AgentSideConnection(cx)
            on_connect = getattr(self.agent, "on_connect", None)
            if on_connect is not None:
                on_connect(self.connection)


async def serve_agent(
    agent: Any, transport: Transport | None = None, *, use_unstable_protocol: bool = False
) -> None:
    """Serve an official-style ``agent`` over ``transport`` (stdio by default)."""
    endpoint = CompatAgentEndpoint(agent, use_unstable_protocol=use_unstable_protocol)
    builder = AgentRole.builder().name(type(agent).__name__)
    builder.on_receive_request(legacy_initialize(endpoint), "initialize")
    endpoint.install(builder)
    await builder.connect_to(transport if transport is not None else stdio())


async def run_agent(
    agent: Any,
    input_stream: Any = None,
    output_stream: Any = None,
    *,
    use_unstable_protocol: bool = False,
    **_: Any,
) -> None:
    """Serve ``agent`` until the client's output ends, as the official ``run_agent``.

    With no streams it serves stdio. ``input_stream`` may also be an acp_fast
    transport, or an asyncio ``StreamWriter`` to the client with
    ``output_stream`` the ``StreamReader`` from it (the official order).
    Other official keywords (buffer limits, observers) are accepted and have
    no effect: acp_fast has no line-length buffer to size.
    """
    await serve_agent(
        agent,
        transport_for(input_stream, output_stream),
        use_unstable_protocol=use_unstable_protocol,
    )
