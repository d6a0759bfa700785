"""One agent process speaking v1 and the v2 draft: ``serve_versioned_agent``.

The connection's first ``initialize`` picks the version (the highest one
served at or below the one asked for; the lowest when it asks for none, or
for a legacy date string). From then on that version's handlers serve the
connection exactly as they serve it on their own: that first ``initialize``
goes through the same handler chain (on v1, the legacy ``protocolVersion``
leniency first, docs/migration.md "Leniencies"), and params that do not
decode are answered -32602 as the dispatch loop answers them
(docs/semantics.md §1.6). The choice stands when that ``initialize`` fails;
a retry is served by the chosen version (v2's guard allows one).
"""

from __future__ import annotations

from typing import Any

from .._async.builder import Builder
from .._async.connection import ConnectionTo
from .._async.handlers import REQUEST, HandlerEntry
from .._async.messages import NOT_HANDLED, UntypedMessage
from .._async.responder import Responder
from .._async.roles import Agent
from .._errors import Error
from .._transports import Transport, stdio
from .agent import BaseAgent, agent_builder
from .v2 import NOT_INITIALIZED, BaseAgentV2, agent_builder_v2

__all__ = ("serve_versioned_agent",)


async def serve_versioned_agent(
    *,
    v1: BaseAgent | None = None,
    v2: BaseAgentV2 | None = None,
    transport: Transport | None = None,
) -> None:
    """Serve a v1 agent, a v2 agent, or both, picking per connection from
    the first ``initialize`` (the highest version at or below the one asked)."""
    if v1 is None and v2 is None:
        raise ValueError("give a v1 agent, a v2 agent, or both")
    # The builders each version is served by on its own: the same handlers.
    builders: dict[int, Builder[Any]] = {}
    if v1 is not None:
        builders[1] = agent_builder(v1)
    if v2 is not None:
        builders[2] = agent_builder_v2(v2)
    chosen: list[int] = []

    async def route(
        message: UntypedMessage, responder: Responder[Any], cx: ConnectionTo[Any]
    ) -> Any:
        if chosen:
            return NOT_HANDLED
        if message.method != "initialize":
            raise Error.invalid_request(NOT_INITIALIZED)
        version = _pick(message.params, builders)
        chosen.append(version)
        handlers = builders[version]._handlers
        # From the next message on, the chosen version's handlers serve.
        for entry in handlers:
            cx.add_dynamic_handler(entry).detach()
        # And this initialize goes down that version's chain now, offered as
        # the dispatch loop offers any message (params that do not decode
        # get -32602); "alone": not to the dynamic handlers just added.
        chain = tuple(e for e in handlers if e.matches(REQUEST, "initialize", None))
        params = message._wire_params()
        declined = await cx._run_chain(REQUEST, chain, "initialize", params, None, responder, True)
        if declined and not responder._done:
            responder.respond_with_error(Error.method_not_found("initialize"))
        return None

    builder = Agent.builder().name("versioned-agent")
    builder.with_handler(HandlerEntry.create(REQUEST, route))
    await builder.connect_to(transport if transport is not None else stdio())


def _pick(params: Any, builders: dict[int, Builder[Any]]) -> int:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    if not isinstance(asked, int) or isinstance(asked, bool):
        return min(builders)
    versions = [v for v in builders if v <= asked]
    return max(versions) if versions else min(builders)
