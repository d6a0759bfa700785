"""acp_fast: the Agent Client Protocol for Python.

Complete request cancellation, typed bindings generated from the ACP schema,
and a compiled core under an anyio API (asyncio and trio)::

    import acp_fast as acp
    from acp_fast.schema import v1
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from ._async.builder import Builder as Builder
from ._async.cancellation import RequestCancellation as RequestCancellation
from ._async.connection import ConnectionTo as ConnectionTo
from ._async.connection import DynamicHandlerGuard as DynamicHandlerGuard
from ._async.handlers import HandlerEntry as HandlerEntry
from ._async.messages import NOT_HANDLED as NOT_HANDLED
from ._async.messages import Dispatch as Dispatch
from ._async.messages import NotHandled as NotHandled
from ._async.messages import NotificationDispatch as NotificationDispatch
from ._async.messages import RequestDispatch as RequestDispatch
from ._async.messages import ResponseDispatch as ResponseDispatch
from ._async.messages import UntypedMessage as UntypedMessage
from ._async.messages import is_cancel_request_notification as is_cancel_request_notification
from ._async.observe import Observer as Observer
from ._async.requests import AbandonedRequestWarning as AbandonedRequestWarning
from ._async.requests import PreparedRequest as PreparedRequest
from ._async.requests import RequestCancellationHandle as RequestCancellationHandle
from ._async.requests import ResponseRouter as ResponseRouter
from ._async.requests import SentRequest as SentRequest
from ._async.responder import Responder as Responder
from ._async.roles import Agent as Agent
from ._async.roles import Client as Client
from ._async.roles import Proxy as Proxy
from ._async.roles import Role as Role
from ._async.roles import UntypedRole as UntypedRole
from ._async.trace import TraceWriter as TraceWriter
from ._errors import Error as Error
from ._errors import ErrorCode as ErrorCode
from ._errors import is_incoming_transport_closed as is_incoming_transport_closed
from ._transports import ByteStreams as ByteStreams
from ._transports import FdTransport as FdTransport
from ._transports import SocketListener as SocketListener
from ._transports import SocketTransport as SocketTransport
from ._transports import Subprocess as Subprocess
from ._transports import Transport as Transport
from ._transports import listen_tcp as listen_tcp
from ._transports import listen_unix as listen_unix
from ._transports import stdio as stdio
from ._transports import tcp as tcp
from ._transports import unix as unix
from ._version import __version__ as __version__

# The typed, class-based API loads the generated schema, which a program that
# only speaks raw JSON-RPC never needs, and the remote transports bring HTTP
# and WebSocket machinery a stdio program never needs: both are imported on
# first use.
_LAZY = {
    "AgentConnection": "._typed.client",
    "AgentConnectionV2": "._typed.v2",
    "BaseAgent": "._typed.agent",
    "BaseAgentV2": "._typed.v2",
    "BaseClient": "._typed.client",
    "BaseClientV2": "._typed.v2",
    "ClientConnection": "._typed.agent",
    "HandlerNameWarning": "._typed.signatures",
    "HttpTransport": "._transports.remote.http_client",
    "Terminal": "._typed.agent",
    "WebSocketError": "._transports.remote.ws_client",
    "WebSocketTransport": "._transports.remote.ws_client",
    "agent_builder": "._typed.agent",
    "client_builder": "._typed.client",
    "connect_to_agent": "._typed.client",
    "connect_to_agent_v2": "._typed.v2",
    "run_agent": "._typed.agent",
    "serve_agent": "._typed.agent",
    "serve_agent_v2": "._typed.v2",
    "serve_versioned_agent": "._typed.versioned",
    "spawn_agent": "._typed.client",
}

if TYPE_CHECKING:
    from ._transports import HttpTransport as HttpTransport
    from ._transports import WebSocketError as WebSocketError
    from ._transports import WebSocketTransport as WebSocketTransport
    from ._typed.agent import BaseAgent as BaseAgent
    from ._typed.agent import ClientConnection as ClientConnection
    from ._typed.agent import Terminal as Terminal
    from ._typed.agent import agent_builder as agent_builder
    from ._typed.agent import run_agent as run_agent
    from ._typed.agent import serve_agent as serve_agent
    from ._typed.client import AgentConnection as AgentConnection
    from ._typed.client import BaseClient as BaseClient
    from ._typed.client import client_builder as client_builder
    from ._typed.client import connect_to_agent as connect_to_agent
    from ._typed.client import spawn_agent as spawn_agent
    from ._typed.signatures import HandlerNameWarning as HandlerNameWarning
    from ._typed.v2 import AgentConnectionV2 as AgentConnectionV2
    from ._typed.v2 import BaseAgentV2 as BaseAgentV2
    from ._typed.v2 import BaseClientV2 as BaseClientV2
    from ._typed.v2 import connect_to_agent_v2 as connect_to_agent_v2
    from ._typed.v2 import serve_agent_v2 as serve_agent_v2
    from ._typed.versioned import serve_versioned_agent as serve_versioned_agent


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_fast' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    _adopt(value)
    globals()[name] = value
    return value


def _adopt(value: object) -> None:
    # Exported classes and functions say they are acp_fast's, wherever they
    # are defined: reprs and docs read ``acp_fast.SentRequest``.
    if isinstance(value, type | types.FunctionType):
        value.__module__ = __name__


__all__ = (
    "NOT_HANDLED",
    "AbandonedRequestWarning",
    "Agent",
    "AgentConnection",
    "AgentConnectionV2",
    "BaseAgent",
    "BaseAgentV2",
    "BaseClient",
    "BaseClientV2",
    "Builder",
    "ByteStreams",
    "Client",
    "ClientConnection",
    "ConnectionTo",
    "Dispatch",
    "DynamicHandlerGuard",
    "Error",
    "ErrorCode",
    "FdTransport",
    "HandlerEntry",
    "HandlerNameWarning",
    "HttpTransport",
    "NotHandled",
    "NotificationDispatch",
    "Observer",
    "PreparedRequest",
    "Proxy",
    "RequestCancellation",
    "RequestCancellationHandle",
    "RequestDispatch",
    "Responder",
    "ResponseDispatch",
    "ResponseRouter",
    "Role",
    "SentRequest",
    "SocketListener",
    "SocketTransport",
    "Subprocess",
    "Terminal",
    "TraceWriter",
    "Transport",
    "UntypedMessage",
    "UntypedRole",
    "WebSocketError",
    "WebSocketTransport",
    "__version__",
    "agent_builder",
    "client_builder",
    "connect_to_agent",
    "connect_to_agent_v2",
    "is_cancel_request_notification",
    "is_incoming_transport_closed",
    "listen_tcp",
    "listen_unix",
    "run_agent",
    "serve_agent",
    "serve_agent_v2",
    "serve_versioned_agent",
    "spawn_agent",
    "stdio",
    "tcp",
    "unix",
)

for _name in __all__:
    if _name in globals():
        _adopt(globals()[_name])
del _name
