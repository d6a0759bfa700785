"""Roles: what this end of a connection is, and whom it talks to.

A role names the counterpart at the other end of the transport, the peers
messages can be addressed to, and how unclaimed messages are treated
(docs/semantics.md §2.1). ``Client.builder()`` builds a connection that
talks to an agent; ``Agent.builder()`` one that talks to a client;
``Proxy.builder()`` one that sits between the two, reaching the client side
plainly and the agent side through ``_proxy/successor`` envelopes;
``UntypedRole.builder()`` a plain JSON-RPC endpoint. ``ConductorToProxy``
is the conductor's end of its link to one proxy (see ``acp_fast.conductor``).

The role classes double as peer names: ``cx.send_request_to(acp.Agent, req)``.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final

import msgspec

from .._core import MISSING, NOTIFICATION, REQUEST
from .._errors import Error
from .handlers import HandlerEntry, PeerStyle
from .messages import (
    NOT_HANDLED,
    PROXY_INITIALIZE_METHOD,
    SUCCESSOR_METHOD,
    NotificationDispatch,
    RequestDispatch,
    decode_params,
    peel_envelope,
    wire_params,
)

if TYPE_CHECKING:
    from .builder import Builder
    from .connection import ConnectionTo
    from .responder import Responder

__all__ = ("Agent", "Client", "ConductorToProxy", "Proxy", "Role", "UntypedRole")

INITIALIZE_METHOD: Final = "initialize"
NEW_SESSION_METHOD: Final = "session/new"


class Role:
    """Base of the roles. Subclasses fill in the class attributes."""

    peers: ClassVar[dict[type, PeerStyle]] = {}
    # Whether default_dispatch does anything (a proxy forwards by default).
    has_default: ClassVar[bool] = False
    # Whether messages may arrive wrapped for a successor peer.
    has_successor: ClassVar[bool] = False
    # Whether sends without a peer go to the counterpart (a proxy has none).
    has_default_peer: ClassVar[bool] = True

    @classmethod
    def builder(cls) -> Builder[Any]:
        """A connection builder for this role."""
        return _builder(cls())

    async def default_dispatch(self, dispatch: Any, cx: ConnectionTo[Any]) -> Any:
        """What happens to a message no handler claimed: by default, nothing."""
        return NOT_HANDLED


# Each role's builder is typed by its counterpart, so that handlers and
# ``connect`` blocks get a ``ConnectionTo[Agent]`` on the client side and a
# ``ConnectionTo[Client]`` on the agent side.


class UntypedRole(Role):
    """A plain JSON-RPC endpoint talking to another one."""

    @classmethod
    def builder(cls) -> Builder[UntypedRole]:
        """A connection builder for a plain JSON-RPC endpoint."""
        return _builder(cls())


class Client(Role):
    """An editor-side endpoint: its counterpart is an agent."""

    @classmethod
    def builder(cls) -> Builder[Agent]:
        """A connection builder for a client; its connection is to an agent."""
        return _builder(cls())


class Agent(Role):
    """An agent-side endpoint: its counterpart is a client."""

    @classmethod
    def builder(cls) -> Builder[Client]:
        """A connection builder for an agent; its connection is to a client."""
        return _builder(cls())


def _builder(role: Role) -> Builder[Any]:
    from .builder import Builder

    return Builder(role)


class Proxy(Role):
    """A component between a client and an agent, inside a conductor's chain.

    Messages to and from the client side travel plainly; messages for the
    agent side (its successor) travel in ``_proxy/successor`` envelopes on the
    same transport. There is no default peer: use the ``*_to`` methods and
    ``peer=`` on handlers.

    What no handler claims is forwarded (docs/semantics.md §5.6), so a bare
    ``Proxy.builder()`` is a pass-through proxy:

    * ``initialize`` from the client side is refused with -32600: a proxy is
      initialized by its conductor with ``_proxy/initialize``;
    * ``_proxy/initialize`` goes on to the agent side as ``initialize``;
    * ``session/new`` goes on to the agent side (see ``forward_new_session``);
    * any other request or notification from the client side goes to the
      agent side, and anything from the agent side goes to the client side,
      each one hop with ``send_proxied_message_to``: requests under a new id,
      their cancellation translated, raw ``$/cancel_request`` dropped.

    Handlers registered on the builder run first; returning
    ``acp.NOT_HANDLED`` hands a message back to this forwarding.
    """

    has_default = True
    has_successor = True
    has_default_peer = False

    async def default_dispatch(self, dispatch: Any, cx: ConnectionTo[Any]) -> Any:
        """Default proxy forwarding (docs/semantics.md §5.6)."""
        message = dispatch.message
        method: str = message.method
        params = wire_params(message)
        if method == SUCCESSOR_METHOD:
            inner = peel_envelope(params)
            if inner is None:
                # No string inner method: not an envelope but an ordinary
                # message of that name (§4.5), which nothing here claims.
                return NOT_HANDLED
            # From the agent side: one envelope off, on to the client side.
            unwrapped = decode_params(None, *inner)
            if isinstance(dispatch, RequestDispatch):
                cx.send_proxied_message_to(Client, RequestDispatch(unwrapped, dispatch.responder))
            else:
                cx.send_proxied_message_to(Client, NotificationDispatch(unwrapped))
            await pace(cx)
            return None
        if isinstance(dispatch, RequestDispatch):
            responder = dispatch.responder
            if method == INITIALIZE_METHOD:
                responder.respond_with_error(
                    Error.invalid_request(
                        f"proxies must be initialized with `{PROXY_INITIALIZE_METHOD}`"
                    )
                )
                return None
            if method == PROXY_INITIALIZE_METHOD:
                # ``_proxy/initialize`` carries the initialize params as they
                # are (flattened): only the method changes on the next hop.
                initialize = decode_params(None, INITIALIZE_METHOD, params)
                cx.send_request_to(Agent, initialize).forward_response_to(responder)
                return None
            if method == NEW_SESSION_METHOD:
                Proxy.forward_new_session(cx, message, responder)
                return None
        # Everything else from the client side; a raw $/cancel_request is
        # dropped there, its translation already went out (§5.3).
        cx.send_proxied_message_to(Agent, dispatch)
        await pace(cx)
        return None

    @staticmethod
    def forward_new_session(
        cx: ConnectionTo[Any],
        request: Any,
        responder: Responder[Any],
        on_session_start: Callable[[Any], Any] | None = None,
    ) -> None:
        """Forward a ``session/new`` request to the agent side, cancellable.

        The request goes on with the upstream cancellation as its source
        (docs/semantics.md §5.6, §5.8): a ``$/cancel_request`` from the client
        side becomes one for the new id. When the answer comes, the dispatch
        loop waits for this (the ordering barrier): on success, the new
        session's requests and notifications from the agent side are routed
        back to the client side, then ``on_session_start(result)`` runs (it
        may be async; the result is the agent's answer, a dict for an untyped
        request; an exception there fails the connection, as in any result
        callback), and only then is the client side answered with the result.
        A failed or cancelled session/new leaves nothing behind and relays
        the error (-32800 when the agent honoured the cancel).

        ``request`` is what a handler got (``v1.NewSessionRequest`` or an
        ``acp.UntypedMessage``); pass a modified copy to rewrite it.
        """
        sent = cx.send_request_to(Agent, request).forward_cancellation_from(
            responder.cancellation()
        )

        async def started(result: Any) -> None:
            if not isinstance(result, Error):
                session_id = _session_id_of(result)
                if session_id is not None:
                    _SessionRoutes.of(cx).add(session_id)
                if on_session_start is not None:
                    outcome = on_session_start(result)
                    if inspect.isawaitable(outcome):
                        await outcome
            responder.respond_with_result(result)

        sent.on_receiving_result(started)


class ConductorToProxy(Role):
    """The conductor's end of its link to one proxy (docs/semantics.md §5.7).

    The peers are named after the proxy's sides: ``acp.Client`` is its client
    side (plain messages: what the proxy sends its predecessor, and what the
    conductor delivers to it from there); ``acp.Agent`` is its agent side
    (``_proxy/successor`` envelopes: what the proxy sends its successor, and
    what the conductor delivers to it from there). A request sent to
    ``acp.Agent`` is wrapped, and so is its ``$/cancel_request``.
    """

    has_successor = True
    has_default_peer = False


async def pace(cx: ConnectionTo[Any]) -> None:
    """Wait while ``cx`` holds more than about 1 MiB of unwritten output.

    Forwarding is a synchronous send per message; a forwarder that calls
    this after sending stops its own reading while the next hop is slow,
    which bounds memory (docs/semantics.md §2.4). Below the mark it costs nothing.
    """
    await cx.drain()


class _SessionIdOnly(msgspec.Struct):
    session_id: Any = msgspec.field(name="sessionId", default=None)


_session_id_decoder: Final = msgspec.json.Decoder(_SessionIdOnly)


def _session_id_of(value: Any) -> Any:
    """The ``sessionId`` of params or a result (raw JSON, dict or struct)."""
    if value is MISSING or value is None:
        return None
    if type(value) is msgspec.Raw:
        try:
            return _session_id_decoder.decode(value).session_id
        except msgspec.DecodeError:
            return None
    if isinstance(value, dict):
        return value.get("sessionId")
    return getattr(value, "session_id", None)


class _SessionRoutes:
    """Sessions of one proxy connection whose agent-side messages go back to
    the client side (docs/semantics.md §5.6).

    The reference installs one dynamic handler per session; here one pair of
    dynamic handlers (requests, notifications) serves every session of the
    connection, so a message costs one set lookup however many sessions
    there are.
    """

    _by_connection: ClassVar[weakref.WeakKeyDictionary[Any, _SessionRoutes]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self.session_ids: set[Any] = set()

    @classmethod
    def of(cls, cx: ConnectionTo[Any]) -> _SessionRoutes:
        routes = cls._by_connection.get(cx)
        if routes is None:
            routes = cls._by_connection[cx] = cls()
            for entry in (
                HandlerEntry.create(REQUEST, routes._relay_request, None, PeerStyle.SUCCESSOR),
                HandlerEntry.create(
                    NOTIFICATION, routes._relay_notification, None, PeerStyle.SUCCESSOR
                ),
            ):
                cx.add_dynamic_handler(entry).detach()
        return routes

    def add(self, session_id: Any) -> None:
        if isinstance(session_id, str):
            self.session_ids.add(session_id)

    def _routes(self, message: Any) -> bool:
        return _session_id_of(wire_params(message)) in self.session_ids

    async def _relay_request(
        self, message: Any, responder: Responder[Any], cx: ConnectionTo[Any]
    ) -> Any:
        if not self._routes(message):
            return NOT_HANDLED
        cx.send_proxied_message_to(Client, RequestDispatch(message, responder))
        return None

    async def _relay_notification(self, message: Any, cx: ConnectionTo[Any]) -> Any:
        if not self._routes(message):
            return NOT_HANDLED
        cx.send_proxied_message_to(Client, NotificationDispatch(message))
        return None


UntypedRole.peers = {UntypedRole: PeerStyle.COUNTERPART}
Client.peers = {Agent: PeerStyle.COUNTERPART}
Agent.peers = {Client: PeerStyle.COUNTERPART}
Proxy.peers = {Client: PeerStyle.PREDECESSOR, Agent: PeerStyle.SUCCESSOR}
ConductorToProxy.peers = {Client: PeerStyle.PREDECESSOR, Agent: PeerStyle.SUCCESSOR}
