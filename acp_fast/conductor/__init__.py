"""Conductors: run a chain of ACP proxies in front of an agent.

``Conductor(proxies=[...], agent=...)`` starts each proxy and the agent (as
subprocesses, or in this process) and serves the whole chain to a client as
one agent; ``acp-fast conductor --proxy CMD ... --agent CMD`` does the same on
stdio. Requests travel hop by hop under each connection's own ids, and a
cancellation is translated at every hop (docs/semantics.md §5.7).

``ConductorToProxy`` is the role of the conductor's end of a link to one
proxy, for building other conductors.
"""

from __future__ import annotations

from .._async.roles import ConductorToProxy
from ._conductor import Component, Conductor, run_conductor

__all__ = ("Component", "Conductor", "ConductorToProxy", "run_conductor")
