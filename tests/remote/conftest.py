"""``serve_app(app)``: a real uvicorn server on loopback for each test.

It starts ``tests.remote.server.RunningServer`` with the given ASGI app (an
``AcpApp`` of the test agent with these options by default) and returns its
base URL (``http://127.0.0.1:PORT``); the server stops when the test ends.
``ws=`` picks uvicorn's WebSocket implementation, ``http=`` its HTTP/1.1
parser (``auto``: httptools, which the ``http`` extra installs; ``h11`` is
what a server without it falls back to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from acp_fast.http import AcpApp
from tests.remote.agent import RemoteTestAgent
from tests.remote.server import RunningServer


@pytest.fixture
def serve_app() -> Iterator[Callable[..., str]]:
    running: list[RunningServer] = []

    def start(
        app: Any = None, *, ws: str = "websockets-sansio", http: str = "auto", **options: Any
    ) -> str:
        served = app if app is not None else AcpApp(RemoteTestAgent, **options)
        server = RunningServer(served, ws, http=http)
        running.append(server)
        return server.url

    yield start
    for server in running:
        server.stop()
