"""Write an ACP agent as a class: one async method per ACP method (protocol v1).

::

    class EchoAgent(acp.BaseAgent):
        async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id="s-1")

        async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
            await self.client.session_update(request.session_id, helpers.agent_text("hi"))
            return v1.PromptResponse(stop_reason="end_turn")

    acp.run_agent(EchoAgent())          # on stdio

Each method receives the typed request (its ``_meta`` is ``request.meta``,
never mixed into the parameters) and returns the typed response. Methods you
do not override answer -32601. ``self.client`` is the typed handle on the
client: updates, permission requests, files, terminals.

The prompt lifecycle of v1 is handled for you: the SDK keeps each session's
running ``prompt`` call, and the client's ``session/cancel`` for that session
cancels that call (and only that one). A cancelled prompt answers
``stopReason: "cancelled"``; requests it was awaiting from the client are
cancelled with it (``$/cancel_request``), as the protocol asks. Override
``cancel`` to be told as well.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from .._async._wire import encode_payload as _encode
from .._async._wire import notification_head
from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.requests import SentRequest
from .._async.responder import Responder
from .._async.roles import Agent
from .._errors import Error
from .._transports import Transport, stdio
from ..schema import v1
from .endpoint import DEFAULT_MAX_CONCURRENT_REQUESTS, Endpoint, overrides
from .lenient import legacy_initialize
from .methods import V1_AGENT_METHODS, V1_UNSTABLE_AGENT_METHODS, AgentMethods
from .per_connection import PerConnection
from .signatures import check_handler_signatures
from .updates import UpdateCheck

__all__ = ("BaseAgent", "ClientConnection", "Terminal", "agent_builder", "run_agent", "serve_agent")

log = logging.getLogger("acp_fast")

_UPDATE_HEAD = notification_head(v1.SessionNotification.METHOD)
_UPDATES = UpdateCheck(v1.SessionUpdate, "v1", compat=True)
_MAX_UPDATE_HEADS = 256
_UPDATE_TYPES = _UPDATES.types


class ClientConnection:
    """What an agent uses to talk to its client (protocol v1)."""

    def __init__(self, cx: ConnectionTo[Any]) -> None:
        self.cx = cx
        # An agent's stream of updates is its busiest path: each update is
        # queued as its finished line (what cx.send_notification writes),
        # with no call in between, when the connection's counterpart is the
        # client (docs/architecture.md).
        self._queue_update = cx._enqueue_update if cx.role.has_default_peer else None
        # Each session's line head up to its update, encoded once: the
        # update is encoded alone and spliced in (no SessionNotification).
        self._update_heads: dict[str, bytes] = {}

    async def session_update(self, session_id: str, update: v1.SessionUpdate) -> None:
        """Send one ``session/update``; waits only when the client reads slowly.

        ``update`` is one of the ``v1.SessionUpdate*`` types (``helpers.agent_text``
        and its neighbours make them); anything else is a ``TypeError`` here,
        before it is sent.
        """
        if type(update) not in _UPDATE_TYPES or type(session_id) is not str:
            _UPDATES.refuse(session_id, update)
        queue = self._queue_update
        if queue is not None:
            head = self._update_heads.get(session_id)
            if head is None:
                head = self._update_head(session_id)
            if queue(head + _encode(update) + b"}}\n"):  # must drain: the client reads slowly
                await self.cx.drain()
            return
        cx = self.cx
        cx.send_notification(v1.SessionNotification(session_id=session_id, update=update))
        if cx._must_drain():  # no coroutine per update when the client keeps up
            await cx.drain()

    def _update_head(self, session_id: str) -> bytes:
        heads = self._update_heads
        if len(heads) >= _MAX_UPDATE_HEADS:
            heads.clear()  # an agent that makes sessions without end
        head = heads[session_id] = (
            _UPDATE_HEAD + b'{"sessionId":' + _encode(session_id) + b',"update":'
        )
        return head

    async def request_permission(
        self,
        session_id: str,
        tool_call: v1.ToolCallUpdate,
        options: Sequence[v1.PermissionOption],
    ) -> v1.RequestPermissionResponse:
        """Ask the user; ``outcome`` is selected (an option id) or cancelled."""
        response: v1.RequestPermissionResponse = await self.cx.send_request(
            v1.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=list(options)
            )
        )
        return response

    async def read_text_file(
        self, session_id: str, path: str, *, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of ``path`` as the client's editor has it."""
        request = v1.ReadTextFileRequest(session_id=session_id, path=path)
        if line is not None:
            request.line = line
        if limit is not None:
            request.limit = limit
        response: v1.ReadTextFileResponse = await self.cx.send_request(request)
        return response.content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self.cx.send_request(
            v1.WriteTextFileRequest(session_id=session_id, path=path, content=content)
        )

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> Terminal:
        """Run a command in a terminal of the client; ``async with`` releases it."""
        request = v1.CreateTerminalRequest(session_id=session_id, command=command, args=list(args))
        if env:
            request.env = [v1.EnvVariable(name=k, value=v) for k, v in env.items()]
        if cwd is not None:
            request.cwd = cwd
        if output_byte_limit is not None:
            request.output_byte_limit = output_byte_limit
        response: v1.CreateTerminalResponse = await self.cx.send_request(request)
        return Terminal(self.cx, session_id, response.terminal_id)

    # -- elicitation ----------------------------------------------------------------

    async def create_elicitation(
        self, request: v1.CreateElicitationRequestForm | v1.CreateElicitationRequestUrl
    ) -> v1.CreateElicitationResponse:
        """Ask the user for structured input; the answer is accept (with
        content), decline or cancel."""
        response: v1.CreateElicitationResponse = await self.cx.send_request(request)
        return response

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL elicitation finished out of band."""
        self.cx.send_notification(v1.CompleteElicitationNotification(elicitation_id=elicitation_id))
        await self.cx.drain()

    def send_request(self, request: Any) -> SentRequest[Any]:
        """Any other request (typed or ``acp.UntypedMessage``)."""
        return self.cx.send_request(request)

    def send_notification(self, notification: Any) -> None:
        self.cx.send_notification(notification)


class Terminal:
    """A terminal running on the client (``ClientConnection.create_terminal``)."""

    def __init__(self, cx: ConnectionTo[Any], session_id: str, terminal_id: str) -> None:
        self.cx = cx
        self.session_id = session_id
        self.id = terminal_id
        self._released = False

    async def output(self) -> v1.TerminalOutputResponse:
        response: v1.TerminalOutputResponse = await self.cx.send_request(
            v1.TerminalOutputRequest(session_id=self.session_id, terminal_id=self.id)
        )
        return response

    async def wait_for_exit(self) -> v1.WaitForTerminalExitResponse:
        response: v1.WaitForTerminalExitResponse = await self.cx.send_request(
            v1.WaitForTerminalExitRequest(session_id=self.session_id, terminal_id=self.id)
        )
        return response

    async def kill(self) -> None:
        await self.cx.send_request(
            v1.KillTerminalRequest(session_id=self.session_id, terminal_id=self.id)
        )

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        await self.cx.send_request(
            v1.ReleaseTerminalRequest(session_id=self.session_id, terminal_id=self.id)
        )

    async def __aenter__(self) -> Terminal:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.release()
            except Error:
                pass


class BaseAgent(AgentMethods):
    """Base class of a class-based v1 agent; override what you support.

    Every v1 agent method is here with its typed default (from
    ``AgentMethods``): a request you do not override answers -32601.

    ``max_concurrent_requests`` bounds how many requests run at once (the
    peer is paced beyond that).
    """

    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS
    #: Opt in to the draft methods (``session/fork``, ``providers/*``,
    #: ``nes/*``, ``document/*``, ``mcp/message``): define e.g. ``fork_session``
    #: and it is routed. Every message then decodes to ``v1_unstable`` types.
    unstable: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_handler_signatures(cls, BaseAgent, V1_AGENT_METHODS)

    #: The connection to the client of the request being handled (one agent
    #: may serve several clients: each handler sees its own, docs/transports.md).
    client = PerConnection[ClientConnection]("client")

    async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
        """Answer ``initialize``. The default speaks v1 and advertises
        ``loadSession`` when ``load_session`` is overridden."""
        return v1.InitializeResponse(
            protocol_version=1,
            agent_capabilities=v1.AgentCapabilities(
                load_session=overrides(self, BaseAgent, "load_session")
            ),
        )

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        """Run one turn. Cancelled by the client's ``session/cancel``."""
        raise Error.method_not_found(v1.PromptRequest.METHOD)

    async def cancel(self, notification: v1.CancelNotification) -> None:
        """Told of ``session/cancel``, after the SDK cancelled that session's prompt."""


class AgentEndpoint(Endpoint):
    """Serves a BaseAgent: tracks each session's running prompt."""

    def __init__(self, agent: BaseAgent) -> None:
        schema: types.ModuleType
        if agent.unstable:
            # Imported here: the unstable schema is as big again as v1, and
            # an agent on the stable one should not pay for it at start-up.
            from ..schema import v1_unstable

            table, schema = V1_UNSTABLE_AGENT_METHODS, v1_unstable
        else:
            table, schema = V1_AGENT_METHODS, v1
        super().__init__(agent, BaseAgent, table, schema, agent.max_concurrent_requests)
        # Running prompts by (connection, session): one agent may serve
        # several clients, whose session ids may be the same. With each, its
        # responder: a turn the client cancelled no longer counts.
        self.turns: dict[tuple[object, str], tuple[anyio.CancelScope, Responder[Any]]] = {}

    def bind(self, cx: ConnectionTo[Any]) -> None:
        super().bind(cx)
        self.instance.client = ClientConnection(cx)

    def implements(self, wire: str, name: str) -> bool:
        # initialize has a working default; session/cancel is always handled
        # because it cancels the running prompt.
        return name in ("initialize", "cancel") or super().implements(wire, name)

    SCOPED = frozenset({"prompt"})

    def begin(self, name: str, request: Any, responder: Responder[Any]) -> anyio.CancelScope | None:
        # One turn at a time per session (docs/semantics.md §1.6), but a turn
        # the client cancelled (session/cancel, or $/cancel_request of its
        # prompt) no longer counts: the client may prompt again at once, and
        # the cancelled turn unwinds beside the new one.
        session_id = request.session_id
        running = self.turns.get((self.cx, session_id))
        if running is not None and not _cancelled(*running):
            raise Error.invalid_request(f"session {session_id!r} is already running a prompt")
        scope = anyio.CancelScope()
        self.turns[self.cx, session_id] = (scope, responder)
        return scope

    def end(self, name: str, request: Any, scope: anyio.CancelScope) -> None:
        for key, (running, _) in list(self.turns.items()):
            if running is scope and key[1] == request.session_id:
                del self.turns[key]

    def cancelled_result(self, name: str, request: Any) -> Any:
        # The client's session/cancel stopped the turn: a v1 prompt then
        # answers normally, with stopReason "cancelled".
        return v1.PromptResponse(stop_reason="cancelled")

    async def notify(
        self, name: str, method: Callable[[Any], Awaitable[Any]], notification: Any
    ) -> None:
        if name == "cancel":
            running = self.turns.get((self.cx, notification.session_id))
            if running is not None:
                self.cancel_scope(running[0])  # a waiting prompt is answered at once
        await method(notification)


def _cancelled(scope: anyio.CancelScope, responder: Responder[Any]) -> bool:
    return scope.cancel_called or responder.cancellation().is_cancelled()


def agent_builder(agent: BaseAgent) -> Builder[Any]:
    """A connection builder serving ``agent`` (add more handlers if you like)."""
    endpoint = AgentEndpoint(agent)
    builder = Agent.builder().name(type(agent).__name__)
    builder.on_receive_request(legacy_initialize(endpoint), "initialize")
    endpoint.install(builder)
    return builder


async def serve_agent(agent: BaseAgent, transport: Transport | None = None) -> None:
    """Serve ``agent`` until the client's output ends (stdio by default)."""
    await agent_builder(agent).connect_to(transport if transport is not None else stdio())


def run_agent(
    agent: BaseAgent, transport: Transport | None = None, *, backend: str = "asyncio"
) -> None:
    """Serve ``agent`` on stdio (or ``transport``) from synchronous code."""
    anyio.run(serve_agent, agent, transport, backend=backend)
