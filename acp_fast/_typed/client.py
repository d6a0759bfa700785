"""Write an ACP client as a class, and drive an agent with typed calls (v1).

::

    class Editor(acp.BaseClient):
        async def session_update(self, notification: v1.SessionNotification) -> None:
            print(notification.update)

        async def request_permission(self, request):
            return helpers.permission_selected(request.options[0].option_id)

    async with acp.spawn_agent(Editor(), ["my-agent"]) as agent:
        await agent.initialize()
        session = await agent.new_session(cwd="/project")
        result = await agent.prompt(session.session_id, "Hello")

``session_update`` runs in the connection's dispatch loop, in arrival order,
so when ``prompt`` returns, every update the agent sent before its answer has
been handled. Requests from the agent (permissions, files, terminals) run
concurrently, beside the dispatch loop. ``agent.cancel(session_id)`` sends ``session/cancel`` and
answers that session's pending permission requests with the ``cancelled``
outcome, as the protocol asks of clients; a ``$/cancel_request`` from the
agent for a permission request answers it the same way.
"""

from __future__ import annotations

import os
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import IO, TYPE_CHECKING, Any

import anyio

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.requests import SentRequest
from .._async.responder import Responder
from .._async.roles import Client
from .._errors import Error
from .._transports import Subprocess, Transport
from ..schema import v1
from .endpoint import DEFAULT_MAX_CONCURRENT_REQUESTS, Endpoint
from .methods import V1_CLIENT_METHODS, V1_UNSTABLE_CLIENT_METHODS, ClientMethods
from .signatures import check_handler_signatures

if TYPE_CHECKING:
    from ..schema import v1_unstable

__all__ = ("AgentConnection", "BaseClient", "client_builder", "connect_to_agent", "spawn_agent")


class BaseClient(ClientMethods):
    """Base class of a class-based v1 client; override what you support.

    Every v1 client method is here with its typed default (from
    ``ClientMethods``): a request you do not override answers -32601.
    """

    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS
    #: Opt in to the draft methods (``mcp/connect``, ``mcp/disconnect``,
    #: ``mcp/message``); every message then decodes to ``v1_unstable`` types.
    unstable: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_handler_signatures(cls, BaseClient, V1_CLIENT_METHODS)

    #: The connection to the agent, set when connected.
    agent: AgentConnection

    async def session_update(self, notification: v1.SessionNotification) -> None:
        """One ``session/update`` from the agent (in order). Ignored by default."""


class ClientEndpoint(Endpoint):
    """Serves a BaseClient: pending permission requests are cancellable by session."""

    def __init__(self, client: BaseClient) -> None:
        schema: types.ModuleType
        if client.unstable:
            # Imported here: a client on the stable schema does not load the
            # unstable one at start-up.
            from ..schema import v1_unstable

            table, schema = V1_UNSTABLE_CLIENT_METHODS, v1_unstable
        else:
            table, schema = V1_CLIENT_METHODS, v1
        super().__init__(client, BaseClient, table, schema, client.max_concurrent_requests)
        self.permissions: dict[str, set[anyio.CancelScope]] = {}

    SCOPED = frozenset({"request_permission"})

    def begin(self, name: str, request: Any, responder: Responder[Any]) -> anyio.CancelScope | None:
        scope = anyio.CancelScope()
        self.permissions.setdefault(request.session_id, set()).add(scope)
        return scope

    def end(self, name: str, request: Any, scope: anyio.CancelScope) -> None:
        scopes = self.permissions.get(request.session_id)
        if scopes is not None:
            scopes.discard(scope)
            if not scopes:
                del self.permissions[request.session_id]

    def cancelled_result(self, name: str, request: Any) -> Any:
        return PERMISSION_CANCELLED  # our own session/cancel stopped it

    def cancelled_by_peer(self, name: str, request: Any) -> Any:
        if name == "request_permission":
            return PERMISSION_CANCELLED  # as for a running one (see call)
        return super().cancelled_by_peer(name, request)

    async def call(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
    ) -> Any:
        try:
            return await super().call(name, method, request, responder)
        except Error as error:
            if name != "request_permission" or error.code != -32800:
                raise
            # The agent cancelled the request ($/cancel_request): the ACP
            # answer to a cancelled permission request is the cancelled outcome.
            return PERMISSION_CANCELLED

    def cancel_permissions(self, session_id: str) -> None:
        for scope in list(self.permissions.get(session_id, ())):
            self.cancel_scope(scope)  # a waiting request is answered at once
        self.permissions.pop(session_id, None)


PERMISSION_CANCELLED = v1.RequestPermissionResponse(outcome=v1.RequestPermissionOutcomeCancelled())


class AgentConnection:
    """What a client uses to drive its agent (protocol v1).

    Each method builds the typed request from its arguments and returns the
    typed response; ``send_request`` takes any request for the rest.
    """

    def __init__(self, cx: ConnectionTo[Any], endpoint: ClientEndpoint) -> None:
        self.cx = cx
        self._endpoint = endpoint
        # The connection's own method, bound here: no frame of ours between
        # the caller and the send (per request). The method below documents it.
        self.send_request = cx.send_request  # type: ignore[method-assign]

    async def initialize(
        self,
        protocol_version: int = 1,
        *,
        client_capabilities: v1.ClientCapabilities | None = None,
        client_info: v1.Implementation | None = None,
    ) -> v1.InitializeResponse:
        request = v1.InitializeRequest(protocol_version=protocol_version)
        if client_capabilities is not None:
            request.client_capabilities = client_capabilities
        if client_info is not None:
            request.client_info = client_info
        response: v1.InitializeResponse = await self.cx.send_request(request)
        return response

    async def authenticate(self, method_id: str) -> v1.AuthenticateResponse:
        response: v1.AuthenticateResponse = await self.cx.send_request(
            v1.AuthenticateRequest(method_id=method_id)
        )
        return response

    async def new_session(
        self,
        cwd: str,
        *,
        mcp_servers: Sequence[Any] = (),
        additional_directories: Sequence[str] | None = None,
    ) -> v1.NewSessionResponse:
        request = v1.NewSessionRequest(cwd=cwd, mcp_servers=list(mcp_servers))
        if additional_directories is not None:
            request.additional_directories = list(additional_directories)
        response: v1.NewSessionResponse = await self.cx.send_request(request)
        return response

    async def load_session(
        self, session_id: str, cwd: str, *, mcp_servers: Sequence[Any] = ()
    ) -> v1.LoadSessionResponse:
        response: v1.LoadSessionResponse = await self.cx.send_request(
            v1.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers))
        )
        return response

    async def prompt(self, session_id: str, prompt: str | Sequence[Any]) -> v1.PromptResponse:
        """Run a turn; ``prompt`` is text or a list of content blocks.

        When this returns, every update the agent sent before answering has
        been handled by ``session_update``.
        """
        blocks = [v1.ContentBlockText(text=prompt)] if isinstance(prompt, str) else list(prompt)
        response: v1.PromptResponse = await self.cx.send_request(
            v1.PromptRequest(session_id=session_id, prompt=blocks)
        )
        return response

    def start_prompt(self, session_id: str, prompt: str | Sequence[Any]) -> SentRequest[Any]:
        """Like ``prompt`` but returns the request handle at once."""
        blocks = [v1.ContentBlockText(text=prompt)] if isinstance(prompt, str) else list(prompt)
        return self.cx.send_request(v1.PromptRequest(session_id=session_id, prompt=blocks))

    async def cancel(self, session_id: str) -> None:
        """Cancel the session's turn: ``session/cancel``, and answer its pending
        permission requests with the cancelled outcome."""
        self.cx.send_notification(v1.CancelNotification(session_id=session_id))
        self._endpoint.cancel_permissions(session_id)

    async def set_session_mode(self, session_id: str, mode_id: str) -> v1.SetSessionModeResponse:
        response: v1.SetSessionModeResponse = await self.cx.send_request(
            v1.SetSessionModeRequest(session_id=session_id, mode_id=mode_id)
        )
        return response

    async def list_sessions(
        self, *, cursor: str | None = None, cwd: str | None = None
    ) -> v1.ListSessionsResponse:
        """One page of the agent's sessions (``next_cursor`` asks for the next)."""
        request = v1.ListSessionsRequest()
        if cursor is not None:
            request.cursor = cursor
        if cwd is not None:
            request.cwd = cwd
        response: v1.ListSessionsResponse = await self.cx.send_request(request)
        return response

    async def close_session(self, session_id: str) -> v1.CloseSessionResponse:
        response: v1.CloseSessionResponse = await self.cx.send_request(
            v1.CloseSessionRequest(session_id=session_id)
        )
        return response

    # -- the rest of the v1 agent methods ------------------------------------------

    async def logout(self) -> v1.LogoutResponse:
        response: v1.LogoutResponse = await self.cx.send_request(v1.LogoutRequest())
        return response

    async def delete_session(self, session_id: str) -> v1.DeleteSessionResponse:
        response: v1.DeleteSessionResponse = await self.cx.send_request(
            v1.DeleteSessionRequest(session_id=session_id)
        )
        return response

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        *,
        mcp_servers: Sequence[v1.McpServer] | None = None,
        additional_directories: Sequence[str] | None = None,
    ) -> v1.ResumeSessionResponse:
        """Reconnect to a session without replaying its history."""
        request = v1.ResumeSessionRequest(session_id=session_id, cwd=cwd)
        if mcp_servers is not None:
            request.mcp_servers = list(mcp_servers)
        if additional_directories is not None:
            request.additional_directories = list(additional_directories)
        response: v1.ResumeSessionResponse = await self.cx.send_request(request)
        return response

    async def set_session_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> v1.SetSessionConfigOptionResponse:
        """Set a config option: a select option's value id, or a boolean."""
        request: v1.SetSessionConfigOptionRequest
        if isinstance(value, bool):
            request = v1.SetSessionConfigOptionRequestBoolean(
                session_id=session_id, config_id=config_id, value=value
            )
        else:
            request = v1.SetSessionConfigOptionRequestValueId(
                session_id=session_id, config_id=config_id, value=value
            )
        response: v1.SetSessionConfigOptionResponse = await self.cx.send_request(request)
        return response

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        *,
        mcp_servers: Sequence[v1_unstable.McpServer] | None = None,
        additional_directories: Sequence[str] | None = None,
    ) -> v1_unstable.ForkSessionResponse:
        """``session/fork`` (unstable schema): a new session with this one's history."""
        from ..schema import v1_unstable

        request = v1_unstable.ForkSessionRequest(session_id=session_id, cwd=cwd)
        if mcp_servers is not None:
            request.mcp_servers = list(mcp_servers)
        if additional_directories is not None:
            request.additional_directories = list(additional_directories)
        response: v1_unstable.ForkSessionResponse = await self.cx.send_request(request)
        return response

    def send_request(self, request: Any) -> SentRequest[Any]:
        """Any other request (typed or ``acp.UntypedMessage``)."""
        return self.cx.send_request(request)

    def send_notification(self, notification: Any) -> None:
        self.cx.send_notification(notification)


def client_builder(client: BaseClient) -> tuple[Builder[Any], ClientEndpoint]:
    """A connection builder serving ``client``, and its endpoint."""
    endpoint = ClientEndpoint(client)
    builder = Client.builder().name(type(client).__name__)
    endpoint.install(builder)
    return builder, endpoint


@asynccontextmanager
async def connect_to_agent(
    client: BaseClient, transport: Transport
) -> AsyncIterator[AgentConnection]:
    """Connect ``client`` to an agent over ``transport``; yields the agent's handle."""
    builder, endpoint = client_builder(client)
    async with builder.connect(transport) as cx:
        endpoint.bind(cx)
        agent = client.agent = AgentConnection(cx, endpoint)
        yield agent


@asynccontextmanager
async def spawn_agent(
    client: BaseClient,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | IO[Any] | None = None,
) -> AsyncIterator[AgentConnection]:
    """Start the agent ``command`` (argv) and connect ``client`` to it.

    Leaving the block closes the agent's stdin, then terminates it if it does
    not exit on its own.
    """
    transport = Subprocess(command, env=env, cwd=cwd, stderr=stderr)
    async with connect_to_agent(client, transport) as agent:
        yield agent
