"""A real uvicorn server on loopback, in a thread of its own.

``RunningServer(app)`` starts uvicorn on 127.0.0.1 (an ephemeral port) with
the given ASGI app (``ws=`` picks uvicorn's WebSocket implementation, the
one ``acp_fast.http.serve`` uses by default); ``url`` is its base URL, ``stop()`` ends it. The test's
own event loop (asyncio or trio) runs the clients, so every byte crosses a
real socket.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from websockets.protocol import State


class RunningServer:
    def __init__(self, app: Any, ws: str = "websockets-sansio", **settings: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            ws=ws,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=3,
            **settings,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        # uvicorn's shutdown sends a Close frame on every WebSocket it holds,
        # and its websockets-sansio implementation raises (in the server's
        # thread) on one whose closing handshake is already under way, as
        # when the test's client has just closed. Let those finish first.
        deadline = time.monotonic() + 5
        while self._closing_websockets() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()

    def _closing_websockets(self) -> bool:
        try:
            connections = list(self.server.server_state.connections)
        except RuntimeError:  # the server's thread changed the set meanwhile
            return True
        return any(
            getattr(getattr(connection, "conn", None), "state", None) is State.CLOSING
            for connection in connections
        )
