"""Run code written for the official ACP Python SDK on acp_fast.

Change the imports only::

    import acp_fast.compat as acp
    from acp_fast.compat.schema import InitializeResponse, PromptResponse
    from acp_fast.compat.helpers import update_agent_message_text

and the agent (or client) keeps its keyword-argument methods, ``on_connect``,
``run_agent`` / ``spawn_agent_process`` / ``connect_to_agent`` and
``RequestError``, on acp_fast's connection layer: its speed, its bounded
memory, and request cancellation (``$/cancel_request`` both ways; a prompt
stops on ``session/cancel`` without bookkeeping). docs/migration.md lists
every difference, and how to move on to the native class API.
"""

from __future__ import annotations

from typing import Any

from . import helpers as helpers
from . import interfaces as interfaces
from . import schema as schema
from ._agent import AgentSideConnection as AgentSideConnection
from ._agent import run_agent as run_agent
from ._agent import serve_agent as serve_agent
from ._client import AgentProcess as AgentProcess
from ._client import ClientSideConnection as ClientSideConnection
from ._client import connect_to_agent as connect_to_agent
from ._client import open_connection as open_connection
from ._client import spawn_agent_process as spawn_agent_process
from .exceptions import RequestError as RequestError
from .helpers import *  # noqa: F403
from .helpers import __all__ as _helper_names
from .interfaces import Agent as Agent
from .interfaces import Client as Client

#: The protocol version these messages speak.
PROTOCOL_VERSION = 1

# The schema classes are importable from here too, as from ``acp``.
_schema_names = [name for name in schema.__all__ if name not in ("BaseModel",)]
globals().update({name: getattr(schema, name) for name in _schema_names})

__all__ = tuple(
    sorted(
        {
            "PROTOCOL_VERSION",
            "Agent",
            "AgentProcess",
            "AgentSideConnection",
            "Client",
            "ClientSideConnection",
            "RequestError",
            "connect_to_agent",
            "helpers",
            "interfaces",
            "open_connection",
            "run_agent",
            "schema",
            "serve_agent",
            "spawn_agent_process",
            *_helper_names,
            *_schema_names,
        }
    )
)


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module 'acp_fast.compat' has no attribute {name!r}")
