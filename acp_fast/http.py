"""Serving agents to remote clients: ``AcpApp``, an ASGI application.

::

    import uvicorn
    from acp_fast.http import AcpApp

    app = AcpApp(MyAgent)            # one MyAgent() per connection
    uvicorn.run(app, host="127.0.0.1", port=8000)

Clients connect over Streamable HTTP (``acp.HttpTransport(url)``) or a
WebSocket (``acp.WebSocketTransport(url)``) on the same path. The app runs
under any ASGI server and mounts in Starlette or FastAPI. docs/remote.md
describes the protocol, the security defaults and how to scale out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ._async.builder import Builder
from ._transports.base import Transport
from ._transports.remote.server import LOCAL_HOSTS, RemoteServer, ServeConnection, ServerOptions
from ._typed.agent import BaseAgent, agent_builder

__all__ = ("GRACEFUL_SHUTDOWN_SECONDS", "AcpApp", "ServerOptions", "serve")

# uvicorn's WebSocket implementation for ``serve`` (its ``ws=`` setting).
DEFAULT_WS = "websockets-sansio"
#: How long ``serve`` waits, once told to stop, for connections to end.
GRACEFUL_SHUTDOWN_SECONDS = 3.0


class AcpApp(RemoteServer):
    """An ASGI app serving one agent per connection.

    ``factory()`` is called for each new connection and returns a
    ``BaseAgent`` (a class works: ``AcpApp(MyAgent)``) or a ``Builder``
    (``acp.Agent.builder()...``). Alternatively ``serve=`` takes a coroutine
    function that serves one connection on the transport it is given.

    Keyword arguments set ``ServerOptions`` fields (``path``, ``token``,
    ``allowed_hosts``, ``allowed_origins``, ``cors_origins``,
    ``max_message_bytes``, ``max_buffered_bytes``, ``idle_timeout``, ...).
    """

    def __init__(
        self,
        factory: Callable[[], BaseAgent | Builder[Any]] | None = None,
        *,
        serve: ServeConnection | None = None,
        options: ServerOptions | None = None,
        **settings: Any,
    ) -> None:
        if (factory is None) == (serve is None):
            raise TypeError("AcpApp needs a factory or serve=, not both")
        if serve is None:
            assert factory is not None
            serve = _serving(factory)
        super().__init__(serve, replace(options or ServerOptions(), **settings))


def _serving(factory: Callable[[], BaseAgent | Builder[Any]]) -> ServeConnection:
    async def serve_one(transport: Transport) -> None:
        made = factory()
        builder = made if isinstance(made, Builder) else agent_builder(made)
        await builder.connect_to(transport)

    return serve_one


def serve(
    app: AcpApp,
    host: str = "127.0.0.1",
    port: int = 8000,
    **uvicorn_settings: Any,
) -> None:
    """Run ``app`` under uvicorn (blocking), on loopback unless told otherwise.

    Listening on another address also needs ``allowed_hosts`` naming the
    host names clients use (DNS-rebinding protection, docs/remote.md).
    WebSockets are served by uvicorn's ``websockets-sansio`` implementation
    unless ``ws=`` says otherwise (the fastest of uvicorn's three, see
    docs/remote.md). Told to stop, it closes every connection first, then
    waits at most ``GRACEFUL_SHUTDOWN_SECONDS`` (uvicorn's
    ``timeout_graceful_shutdown``); a Ctrl-C raises ``KeyboardInterrupt``
    once it has stopped.
    """
    import uvicorn

    if host not in LOCAL_HOSTS and tuple(app.options.allowed_hosts) == LOCAL_HOSTS:
        raise ValueError(
            f"serving on {host!r}: pass allowed_hosts= the host names clients use (or ['*'])"
        )
    uvicorn_settings.setdefault("ws", DEFAULT_WS)
    # An open SSE stream never ends by itself: without a bound, a SIGTERM
    # would wait for every client to leave (docs/remote.md, "Serving").
    uvicorn_settings.setdefault("timeout_graceful_shutdown", GRACEFUL_SHUTDOWN_SECONDS)

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            # uvicorn waits for open responses before the lifespan's
            # shutdown, and an SSE stream never ends by itself: the app's
            # connections are closed first (their streams end, their
            # sockets get a close frame), once nothing new is accepted.
            for listening in self.servers:
                listening.close()
            await app.aclose()
            await super().shutdown(sockets)

    server = Server(uvicorn.Config(app, host=host, port=port, **uvicorn_settings))
    # Server.run, not uvicorn.run: that one swallows the KeyboardInterrupt of
    # a Ctrl-C, so a command line could not exit 130.
    server.run()
    if not server.started:
        raise OSError(f"uvicorn could not start serving on {host}:{port} (see its log)")
