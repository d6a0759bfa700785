"""Class-based agents and clients for the ACP v2 draft (kept apart from v1).

What differs from v1, and what the SDK does about it:

* **Initialization guard** (docs/semantics.md §1.6): until ``initialize``
  has succeeded, an agent answers other requests -32600 ("initialization
  must complete") and drops other notifications; a client refuses to send
  them (the same error, locally, nothing written). A second ``initialize``
  is refused with "only be initialized once"; a failed one can be retried.
  ``$/cancel_request`` is always allowed.
* **Prompt lifecycle** (spec docs/protocol/v2/prompt-lifecycle.mdx): a
  ``session/prompt`` request only lasts until the agent accepts the prompt.
  ``BaseAgentV2.prompt`` is the *turn*: the SDK answers ``{}`` at once, sends
  ``state_update: running``, runs the turn in a task of its own, then sends
  ``state_update: idle`` with the stop reason the turn returned.
  ``session/cancel`` stops the session's active turn, which then ends
  ``idle`` with ``stopReason: "cancelled"``.
* ``AgentConnectionV2.prompt`` sends the prompt and returns the stop reason
  of the ``idle`` update that ends the turn.

``serve_versioned_agent(v1=..., v2=...)`` (``versioned.py``) serves both.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.messages import NOT_HANDLED
from .._async.responder import Responder
from .._async.roles import Agent, Client
from .._errors import Error
from .._transports import Transport, stdio
from ..schema import v2
from .endpoint import DEFAULT_MAX_CONCURRENT_REQUESTS, Endpoint
from .methods import V2_AGENT_METHODS, V2_CLIENT_METHODS, AgentMethodsV2, ClientMethodsV2
from .per_connection import PerConnection
from .signatures import check_handler_signatures
from .updates import UpdateCheck

__all__ = (
    "AgentConnectionV2",
    "BaseAgentV2",
    "BaseClientV2",
    "ClientConnectionV2",
    "agent_builder_v2",
    "connect_to_agent_v2",
    "serve_agent_v2",
)

log = logging.getLogger("acp_fast")

_UPDATES = UpdateCheck(v2.SessionUpdate, "v2")
_UPDATE_TYPES = _UPDATES.types

NOT_INITIALIZED = "initialization must complete before this request"
ALREADY_INITIALIZED = "the connection can only be initialized once"


class _Guard:
    """uninitialized -> initializing -> ready; a failure goes back to uninitialized."""

    def __init__(self) -> None:
        self.state = "uninitialized"

    def check(self, method: str) -> None:
        if method == "initialize":
            if self.state == "ready":
                raise Error.invalid_request(ALREADY_INITIALIZED)
            if self.state == "initializing":
                raise Error.invalid_request("initialize is already in progress")
        elif self.state != "ready" and not method.startswith("$/"):
            raise Error.invalid_request(NOT_INITIALIZED)


# --- agent side ------------------------------------------------------------------


class ClientConnectionV2:
    """What a v2 agent uses to talk to its client."""

    def __init__(self, cx: ConnectionTo[Any]) -> None:
        self.cx = cx

    async def session_update(self, session_id: str, update: v2.SessionUpdate) -> None:
        """Send one ``session/update``; ``update`` is one of the
        ``v2.SessionUpdate*`` types, else a ``TypeError`` before it is sent."""
        if type(update) not in _UPDATE_TYPES or type(session_id) is not str:
            _UPDATES.refuse(session_id, update)
        self.cx.send_notification(
            v2.UpdateSessionNotification(session_id=session_id, update=update)
        )
        await self.cx.drain()

    async def request_permission(
        self, session_id: str, title: str, options: Sequence[v2.PermissionOption], **fields: Any
    ) -> v2.RequestPermissionResponse:
        response: v2.RequestPermissionResponse = await self.cx.send_request(
            v2.RequestPermissionRequest(
                session_id=session_id, title=title, options=list(options), **fields
            )
        )
        return response


class BaseAgentV2(AgentMethodsV2):
    """Base class of a class-based v2 agent; override what you support.

    Every v2 agent method is here with its typed default (from
    ``AgentMethodsV2``); ``prompt`` follows the v2 acceptance lifecycle.
    """

    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_handler_signatures(cls, BaseAgentV2, V2_AGENT_METHODS)

    client = PerConnection[ClientConnectionV2]("client")

    async def initialize(self, request: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=2, info=v2.Implementation(name=type(self).__name__, version="0")
        )

    async def prompt(self, request: v2.PromptRequest) -> str:
        """Run one turn after the prompt was accepted; return its stop reason."""
        raise Error.method_not_found(v2.PromptRequest.METHOD)

    async def cancel(self, notification: v2.CancelSessionNotification) -> None:
        """Told of ``session/cancel``, after the SDK cancelled that session's turn."""


class AgentEndpointV2(Endpoint):
    def __init__(self, agent: BaseAgentV2) -> None:
        super().__init__(agent, BaseAgentV2, V2_AGENT_METHODS, v2, agent.max_concurrent_requests)
        # Per connection: one agent may serve several clients, each of which
        # initializes its own connection.
        self.guards: weakref.WeakKeyDictionary[ConnectionTo[Any], _Guard] = (
            weakref.WeakKeyDictionary()
        )
        # By (connection, session): one agent may serve several clients.
        self.turns: dict[tuple[object, str], anyio.CancelScope] = {}

    def bind(self, cx: ConnectionTo[Any]) -> None:
        super().bind(cx)
        self.instance.client = ClientConnectionV2(cx)

    def implements(self, wire: str, name: str) -> bool:
        return name in ("initialize", "cancel") or super().implements(wire, name)

    def guard(self, cx: ConnectionTo[Any]) -> _Guard:
        guard = self.guards.get(cx)
        if guard is None:
            guard = self.guards[cx] = _Guard()
        return guard

    def current(self) -> ConnectionTo[Any]:
        """The connection of the request being handled: resolved through the
        context, right in the tasks requests run in (``self.cx`` is the last
        one bound)."""
        cx: ConnectionTo[Any] = self.instance.client.cx
        return cx

    def install(self, builder: Builder[Any]) -> Builder[Any]:
        # The guard runs first: requests before initialize are refused and
        # notifications dropped, whatever handlers follow (§1.6).
        async def guard_requests(message: Any, responder: Responder[Any], cx: Any) -> Any:
            self.guard(cx).check(message.method)
            return NOT_HANDLED

        async def guard_notifications(message: Any, cx: Any) -> Any:
            if self.guard(cx).state != "ready" and not message.method.startswith("$/"):
                return None  # dropped
            return NOT_HANDLED

        builder.on_receive_request(guard_requests)
        builder.on_receive_notification(guard_notifications)
        return super().install(builder)

    async def call(
        self,
        name: str,
        method: Callable[[Any], Awaitable[Any]],
        request: Any,
        responder: Responder[Any],
    ) -> Any:
        if name == "initialize":
            guard = self.guard(self.current())
            guard.state = "initializing"
            try:
                result = await super().call(name, method, request, responder)
            except BaseException:
                guard.state = "uninitialized"  # a retry is allowed
                raise
            guard.state = "ready"
            return result
        if name == "prompt":
            return self._accept(request)
        return await super().call(name, method, request, responder)

    def _accept(self, request: v2.PromptRequest) -> v2.PromptResponse:
        session_id = request.session_id
        cx = self.current()
        if (cx, session_id) in self.turns:
            raise Error.invalid_request(f"session {session_id!r} already has an active turn")
        scope = self.turns[cx, session_id] = anyio.CancelScope()
        cx.spawn(self._turn, request, scope)
        return v2.PromptResponse()

    async def _turn(self, request: v2.PromptRequest, scope: anyio.CancelScope) -> None:
        client: ClientConnectionV2 = self.instance.client
        session_id = request.session_id
        stop_reason: str = "cancelled"  # unless the turn finishes on its own
        try:
            await client.session_update(session_id, v2.SessionUpdateStateUpdate(state="running"))
            with scope:
                try:
                    stop_reason = await self.instance.prompt(request) or "end_turn"
                except Exception as exc:
                    # A turn has no answer to carry an error any more: it
                    # ends idle, with an extension stop reason, and is logged.
                    log.error("the turn of session %r failed", session_id, exc_info=exc)
                    stop_reason = "_error"
        finally:
            for key, running in list(self.turns.items()):
                if running is scope and key[1] == session_id:
                    del self.turns[key]
            with anyio.CancelScope(shield=True):
                await client.session_update(
                    session_id, v2.SessionUpdateStateUpdate(state="idle", stop_reason=stop_reason)
                )

    async def notify(
        self, name: str, method: Callable[[Any], Awaitable[Any]], notification: Any
    ) -> None:
        if name == "cancel":
            scope = self.turns.get((self.cx, notification.session_id))
            if scope is not None:
                scope.cancel()
        await method(notification)


def agent_builder_v2(agent: BaseAgentV2) -> Builder[Any]:
    builder = Agent.builder().name(type(agent).__name__)
    AgentEndpointV2(agent).install(builder)
    return builder


async def serve_agent_v2(agent: BaseAgentV2, transport: Transport | None = None) -> None:
    await agent_builder_v2(agent).connect_to(transport if transport is not None else stdio())


# --- client side -------------------------------------------------------------------


class BaseClientV2(ClientMethodsV2):
    """Base class of a class-based v2 client; override what you support.

    Every v2 client method is here with its typed default (from
    ``ClientMethodsV2``).
    """

    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_handler_signatures(cls, BaseClientV2, V2_CLIENT_METHODS)

    agent: AgentConnectionV2

    async def session_update(self, notification: v2.UpdateSessionNotification) -> None:
        """One ``session/update`` (in order). Ignored by default."""


class ClientEndpointV2(Endpoint):
    def __init__(self, client: BaseClientV2) -> None:
        super().__init__(
            client, BaseClientV2, V2_CLIENT_METHODS, v2, client.max_concurrent_requests
        )
        self.idle: dict[str, list[Callable[[str], None]]] = {}

    def implements(self, wire: str, name: str) -> bool:
        return name == "session_update" or super().implements(wire, name)

    async def notify(
        self, name: str, method: Callable[[Any], Awaitable[Any]], notification: Any
    ) -> None:
        await method(notification)
        update = notification.update
        if isinstance(update, v2.SessionUpdateStateUpdate) and update.state == "idle":
            for resolve in self.idle.pop(notification.session_id, ()):
                resolve(update.stop_reason if isinstance(update.stop_reason, str) else "end_turn")


class AgentConnectionV2:
    """What a v2 client uses to drive its agent."""

    def __init__(self, cx: ConnectionTo[Any], endpoint: ClientEndpointV2) -> None:
        self.cx = cx
        self._endpoint = endpoint
        self._guard = _Guard()

    def _send(self, request: Any) -> Any:
        self._guard.check(request.METHOD)
        return self.cx.send_request(request)

    async def initialize(
        self, info: v2.Implementation, *, capabilities: v2.ClientCapabilities | None = None
    ) -> v2.InitializeResponse:
        request = v2.InitializeRequest(protocol_version=2, info=info)
        if capabilities is not None:
            request.capabilities = capabilities
        self._guard.check("initialize")
        self._guard.state = "initializing"
        try:
            response: v2.InitializeResponse = await self.cx.send_request(request)
        except BaseException:
            self._guard.state = "uninitialized"
            raise
        self._guard.state = "ready"
        return response

    async def new_session(self, cwd: str) -> v2.NewSessionResponse:
        response: v2.NewSessionResponse = await self._send(v2.NewSessionRequest(cwd=cwd))
        return response

    async def prompt(self, session_id: str, prompt: str | Sequence[v2.ContentBlock]) -> str:
        """Run a turn; returns its stop reason (from the ``idle`` update)."""
        blocks: list[v2.ContentBlock] = (
            [v2.ContentBlockText(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        ended = anyio.Event()
        outcome: list[str] = []

        def resolve(stop_reason: str) -> None:
            outcome.append(stop_reason)
            ended.set()

        # Registered before sending: the idle update cannot slip past.
        self._endpoint.idle.setdefault(session_id, []).append(resolve)
        await self._send(v2.PromptRequest(session_id=session_id, prompt=blocks))
        await ended.wait()
        return outcome[0]

    async def cancel(self, session_id: str) -> None:
        """Cancel the session's active work (``session/cancel``)."""
        self._guard.check("session/cancel")
        self.cx.send_notification(v2.CancelSessionNotification(session_id=session_id))

    def send_request(self, request: Any) -> Any:
        return self._send(request)


@asynccontextmanager
async def connect_to_agent_v2(
    client: BaseClientV2, transport: Transport
) -> AsyncIterator[AgentConnectionV2]:
    endpoint = ClientEndpointV2(client)
    builder = Client.builder().name(type(client).__name__)
    endpoint.install(builder)
    async with builder.connect(transport) as cx:
        endpoint.bind(cx)
        agent = client.agent = AgentConnectionV2(cx, endpoint)
        yield agent
