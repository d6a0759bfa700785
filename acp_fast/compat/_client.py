"""The client side of the compatibility layer: ``spawn_agent_process``,
``connect_to_agent`` and ``ClientSideConnection``.

The client's handlers are served by acp_fast's class-based machinery:
``session_update`` runs in arrival order, so when ``prompt`` returns every
update sent before the answer has been handled (no tracker needed);
``cancel`` also answers the session's pending permission requests with the
cancelled outcome. Cancelling the task awaiting a request (``wait_for``, a
task's ``cancel()``) sends ``$/cancel_request`` to the agent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._async.connection import ConnectionTo
from .._async.messages import UntypedMessage
from .._async.roles import Client as ClientRole
from .._errors import Error
from .._transports import Subprocess, Transport
from .._typed.client import BaseClient, ClientEndpoint
from .._typed.endpoint import DEFAULT_MAX_CONCURRENT_REQUESTS, Endpoint
from .._typed.methods import V1_CLIENT_METHODS
from ..schema import v1, v1_unstable
from . import _models
from ._kwargs import Forward, request
from ._streams import transport_for
from .exceptions import RequestError
from .interfaces import Client, implemented

__all__ = (
    "AgentProcess",
    "ClientSideConnection",
    "connect_to_agent",
    "open_connection",
    "spawn_agent_process",
)

_S = _models.CLASSES
_UNSTABLE_CLIENT = ("elicitation/create", "elicitation/complete")


class _Handlers:
    """The client's methods, as acp_fast's client machinery calls them."""

    def __init__(self, client: Any, table: Mapping[str, str]) -> None:
        self.client = client
        self.max_concurrent_requests = getattr(
            client, "max_concurrent_requests", DEFAULT_MAX_CONCURRENT_REQUESTS
        )
        for name in table.values():
            if implemented(client, Client, name):
                setattr(self, name, Forward(getattr(client, name)))
        # Looked up once: extension methods are the per-message hot path.
        self._ext_method = client.ext_method if implemented(client, Client, "ext_method") else None
        self._ext_notification = (
            client.ext_notification if implemented(client, Client, "ext_notification") else None
        )

    async def ext_method(self, method: str, params: Any) -> Any:
        ext_method = self._ext_method
        if ext_method is None:
            raise RequestError.method_not_found(method)
        return await ext_method(method[1:], params if isinstance(params, dict) else {})

    async def ext_notification(self, method: str, params: Any) -> None:
        ext_notification = self._ext_notification
        if ext_notification is not None:
            await ext_notification(method[1:], params if isinstance(params, dict) else {})


class CompatClientEndpoint(ClientEndpoint):
    """acp_fast's client endpoint, serving an official-style client."""

    def __init__(self, client: Any, *, use_unstable_protocol: bool = False) -> None:
        table = {
            wire: name
            for wire, name in V1_CLIENT_METHODS.items()
            # Typed elicitation has its own shape in this schema version:
            # reach it through acp_fast's BaseClient.
            if wire != "elicitation/create"
            and (use_unstable_protocol or wire not in _UNSTABLE_CLIENT)
        }
        handlers = _Handlers(client, table)
        Endpoint.__init__(
            self,
            handlers,
            BaseClient,
            table,
            v1_unstable if use_unstable_protocol else v1,
            handlers.max_concurrent_requests,
        )
        self.permissions = {}
        self.client = client

    def implements(self, wire: str, name: str) -> bool:
        return wire in self.schema.METHODS and hasattr(self.instance, name)


class ClientSideConnection:
    """The client's handle on its agent, with the official SDK's methods.

    Made by ``spawn_agent_process`` / ``connect_to_agent``. Requests return
    the response model (``RequestError`` when the agent answers an error).
    """

    def __init__(
        self,
        to_client: Callable[[Any], Any] | Any,
        input_stream: Any = None,
        output_stream: Any = None,
        *,
        use_unstable_protocol: bool = False,
        **_: Any,
    ) -> None:
        client = to_client(self) if callable(to_client) else to_client
        self._endpoint = CompatClientEndpoint(client, use_unstable_protocol=use_unstable_protocol)
        self._cx: ConnectionTo[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        if input_stream is not None or output_stream is not None:
            transport = transport_for(input_stream, output_stream)
            assert transport is not None
            self._start_in_background(transport)
        on_connect = getattr(client, "on_connect", None)
        if on_connect is not None:
            on_connect(self)

    def _builder(self) -> Any:
        builder = ClientRole.builder().name(type(self._endpoint.client).__name__)
        self._endpoint.install(builder)
        return builder

    def _attach(self, cx: ConnectionTo[Any]) -> None:
        self._endpoint.bind(cx)
        self._cx = cx

    def _start_in_background(self, transport: Transport) -> None:
        # The official SDK runs its connection in a task of the running
        # asyncio loop; without an enclosing block that is the only way.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "connect_to_agent needs a running asyncio loop; on trio (or for a "
                "connection closed with its block) use `async with "
                "acp_fast.compat.spawn_agent_process(...)` or acp_fast.connect_to_agent"
            ) from None
        self._closing = asyncio.Event()
        self._ready = asyncio.Event()
        self._task = loop.create_task(self._run(transport))

    async def _run(self, transport: Transport) -> None:
        assert self._closing is not None and self._ready is not None
        try:
            async with self._builder().connect(transport) as cx:
                self._attach(cx)
                self._ready.set()
                await self._closing.wait()
        finally:
            self._ready.set()

    async def _connection(self) -> ConnectionTo[Any]:
        if self._cx is None and self._ready is not None:
            await self._ready.wait()
        if self._cx is None:
            raise ConnectionError("Connection closed")
        return self._cx

    async def _request(self, message: Any) -> Any:
        cx = self._cx
        if cx is None:
            cx = await self._connection()
        return await request(cx.send_request(message))

    async def _notify(self, message: Any) -> None:
        cx = await self._connection()
        cx.send_notification(message)
        await cx.drain()

    # -- the agent's methods ---------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any | None = None,
        client_info: Any | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._request(
            _S["InitializeRequest"](
                protocol_version=protocol_version,
                client_capabilities=client_capabilities,
                client_info=client_info,
                field_meta=kwargs or None,
            )
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: Sequence[str] | None = None,
        mcp_servers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._request(
            _S["NewSessionRequest"](
                cwd=cwd,
                additional_directories=_list(additional_directories),
                mcp_servers=list(mcp_servers or ()),
                field_meta=kwargs or None,
            )
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Sequence[Any] | None = None,
        additional_directories: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._request(
            _S["LoadSessionRequest"](
                cwd=cwd,
                session_id=session_id,
                mcp_servers=list(mcp_servers or ()),
                additional_directories=_list(additional_directories),
                field_meta=kwargs or None,
            )
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> Any:
        return await self._request(
            _S["ListSessionsRequest"](cwd=cwd, cursor=cursor, field_meta=kwargs or None)
        )

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        return await self._request(
            _S["SetSessionModeRequest"](
                session_id=session_id, mode_id=mode_id, field_meta=kwargs or None
            )
        )

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> Any:
        name = (
            "SetSessionConfigOptionBooleanRequest"
            if isinstance(value, bool)
            else "SetSessionConfigOptionSelectRequest"
        )
        return await self._request(
            _S[name](
                config_id=config_id, session_id=session_id, value=value, field_meta=kwargs or None
            )
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> Any:
        return await self._request(
            _S["AuthenticateRequest"](method_id=method_id, field_meta=kwargs or None)
        )

    async def prompt(self, session_id: str, prompt: Sequence[Any], **kwargs: Any) -> Any:
        """Run a turn; every update sent before the answer has been handled on return."""
        return await self._request(
            _S["PromptRequest"](
                session_id=session_id, prompt=list(prompt), field_meta=kwargs or None
            )
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] | None = None,
        mcp_servers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._request(
            _S["ForkSessionRequest"](
                session_id=session_id,
                cwd=cwd,
                additional_directories=_list(additional_directories),
                mcp_servers=_list(mcp_servers),
                field_meta=kwargs or None,
            )
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: Sequence[str] | None = None,
        mcp_servers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        return await self._request(
            _S["ResumeSessionRequest"](
                session_id=session_id,
                cwd=cwd,
                additional_directories=_list(additional_directories),
                mcp_servers=_list(mcp_servers),
                field_meta=kwargs or None,
            )
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> Any:
        return await self._request(
            _S["CloseSessionRequest"](session_id=session_id, field_meta=kwargs or None)
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``; the session's pending permission requests are
        answered with the cancelled outcome."""
        await self._notify(
            _S["CancelNotification"](session_id=session_id, field_meta=kwargs or None)
        )
        self._endpoint.cancel_permissions(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """Send the extension request ``_<method>``; its result as plain JSON."""
        cx = self._cx
        if cx is None:
            cx = await self._connection()
        # request_json, inlined: one coroutine less per round trip.
        try:
            return await cx.send_request(UntypedMessage(f"_{method}", params))
        except RequestError:
            raise
        except Error as error:
            raise RequestError.from_error(error) from None

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        await self._notify(UntypedMessage(f"_{method}", params))

    async def close(self) -> None:
        """End the connection (when it was made by ``connect_to_agent``)."""
        if self._closing is not None:
            self._closing.set()
        if self._task is not None:
            task, self._task = self._task, None
            await asyncio.shield(task)

    async def __aenter__(self) -> ClientSideConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def on_connect(self, conn: Any) -> None:
        pass


def _list(items: Sequence[Any] | None) -> list[Any] | None:
    return list(items) if items is not None else None


def connect_to_agent(
    client: Any,
    input_stream: Any,
    output_stream: Any = None,
    *,
    use_unstable_protocol: bool = False,
    **kwargs: Any,
) -> ClientSideConnection:
    """A connection to the agent on ``input_stream``/``output_stream`` (asyncio).

    As in the official SDK it runs in a task of the running loop until
    ``close()``: pass an asyncio ``StreamWriter`` to the agent and the
    ``StreamReader`` from it, or one acp_fast transport.
    """
    return ClientSideConnection(
        client, input_stream, output_stream, use_unstable_protocol=use_unstable_protocol, **kwargs
    )


class AgentProcess:
    """The spawned agent, with the parts of ``asyncio.subprocess.Process`` clients use."""

    def __init__(self, transport: Subprocess) -> None:
        self._transport = transport

    @property
    def pid(self) -> int | None:
        process = self._transport.process
        return process.pid if process is not None else None

    @property
    def returncode(self) -> int | None:
        if self._transport.returncode is not None:
            return self._transport.returncode
        process = self._transport.process
        return process.poll() if process is not None else None

    async def wait(self) -> int:
        while True:
            code = self.returncode
            if code is not None:
                return code
            await anyio.sleep(0.01)

    def kill(self) -> None:
        if self._transport.process is not None and self.returncode is None:
            self._transport.process.kill()

    def terminate(self) -> None:
        if self._transport.process is not None and self.returncode is None:
            self._transport.process.terminate()


@asynccontextmanager
async def spawn_agent_process(
    to_client: Callable[[Any], Any] | Any,
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    transport_kwargs: Mapping[str, Any] | None = None,
    use_unstable_protocol: bool = False,
    **_: Any,
) -> AsyncIterator[tuple[ClientSideConnection, AgentProcess]]:
    """Start the agent ``command *args`` and yield ``(connection, process)``.

    Leaving the block closes the agent's stdin, waits for it to exit, then
    terminates it. Its stderr is passed through unless ``transport_kwargs``
    says ``stderr=`` (a file, ``DEVNULL``; ``PIPE``, never read, is taken as
    ``DEVNULL``). ``env`` replaces the environment; by default the child
    inherits this process's.
    """
    stderr = dict(transport_kwargs or {}).get("stderr")
    if stderr == subprocess.PIPE:
        stderr = subprocess.DEVNULL
    transport = Subprocess([command, *args], env=env, cwd=cwd, stderr=stderr)
    async with open_connection(
        to_client, transport, use_unstable_protocol=use_unstable_protocol
    ) as conn:
        yield conn, AgentProcess(transport)


@asynccontextmanager
async def open_connection(
    to_client: Callable[[Any], Any] | Any,
    transport: Transport,
    *,
    use_unstable_protocol: bool = False,
) -> AsyncIterator[ClientSideConnection]:
    """A connection to the agent over an acp_fast ``transport``, for the block.

    Not in the official SDK: the form of ``connect_to_agent`` that works on
    any event loop (trio too) and closes with its block.
    """
    conn = ClientSideConnection(to_client, use_unstable_protocol=use_unstable_protocol)
    async with conn._builder().connect(transport) as cx:
        conn._attach(cx)
        yield conn
