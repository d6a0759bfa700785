"""Roles: what this end of a connection is, and whom it talks to.

A role names the counterpart at the other end of the transport, the peers
messages can be addressed to, and how unclaimed messages are treated
(rust-sdk-semantics §2.1). ``Client.builder()`` builds a connection that
talks to an agent; ``Agent.builder()`` one that talks to a client;
``Proxy.builder()`` one that sits between the two, reaching the client side
plainly and the agent side through ``_proxy/successor`` envelopes;
``UntypedRole.builder()`` a plain JSON-RPC endpoint.

The role classes double as peer names: ``cx.send_request_to(acp.Agent, req)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .handlers import PeerStyle
from .messages import NOT_HANDLED

if TYPE_CHECKING:
    from .builder import Builder
    from .connection import ConnectionTo

__all__ = ("Agent", "Client", "Proxy", "Role", "UntypedRole")


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
        from .builder import Builder

        return Builder(cls())

    async def default_dispatch(self, dispatch: Any, cx: ConnectionTo[Any]) -> Any:
        """What happens to a message no handler claimed: by default, nothing."""
        return NOT_HANDLED


class UntypedRole(Role):
    """A plain JSON-RPC endpoint talking to another one."""


class Client(Role):
    """An editor-side endpoint: its counterpart is an agent."""


class Agent(Role):
    """An agent-side endpoint: its counterpart is a client."""


class Proxy(Role):
    """A component between a client and an agent, inside a conductor's chain.

    Messages to and from the client side travel plainly; messages for the
    agent side (its successor) travel in ``_proxy/successor`` envelopes on the
    same transport. There is no default peer: use the ``*_to`` methods and
    ``peer=`` on handlers.
    """

    has_successor = True
    has_default_peer = False


UntypedRole.peers = {UntypedRole: PeerStyle.COUNTERPART}
Client.peers = {Agent: PeerStyle.COUNTERPART}
Agent.peers = {Client: PeerStyle.COUNTERPART}
Proxy.peers = {Client: PeerStyle.PREDECESSOR, Agent: PeerStyle.SUCCESSOR}
