"""``acp-fast serve`` told to stop while a client streams (docs/remote.md,
"Serving"): an open SSE stream never ends by itself, so the server waits
for connections only ``GRACEFUL_SHUTDOWN_SECONDS``, then exits as a signal
N asks (128 + N: Ctrl-C 130, SIGTERM 143), without a traceback."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

import acp_fast as acp
from acp_fast.http import GRACEFUL_SHUTDOWN_SECONDS
from tests.remote.agent import RecordingClient

from .test_bridge_drop import start_server
from .test_cli import free_port

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_a_signal_stops_serve_while_a_prompt_streams(
    tmp_path: Path, signum: int, kind: str
) -> None:
    port = free_port()
    stderr = tmp_path / "stderr"
    server = start_server(port, "factory", tmp_path / "pids", stderr)
    url = f"127.0.0.1:{port}/acp"
    transport = (
        acp.HttpTransport(f"http://{url}")
        if kind == "http"
        else acp.WebSocketTransport(f"ws://{url}")
    )
    recording = RecordingClient()
    stopped: list[int] = []

    async def stop_when_streaming() -> None:
        await recording.updated.wait()  # the barrier: the prompt streams
        server.send_signal(signum)
        stopped.append(await anyio.to_thread.run_sync(server.wait, GRACEFUL_SHUTDOWN_SECONDS + 10))

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(stop_when_streaming)
                try:
                    async with acp.connect_to_agent(recording, transport) as agent:
                        await agent.initialize()
                        session = await agent.new_session(cwd="/")
                        await agent.prompt(session.session_id, "wait")
                except acp.Error:
                    pass  # the server went away while the prompt streamed: expected
    except subprocess.TimeoutExpired:
        pytest.fail("acp-fast serve did not stop")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    # A process ended by a signal N is -N to Popen, 128 + N to a shell.
    status = 128 - stopped[0] if stopped[0] < 0 else stopped[0]
    assert status == 128 + signum, stderr.read_text()
    log = stderr.read_text()
    assert "Traceback" not in log, log


@pytest.mark.parametrize("kind", ["bridge", "factory"])
def test_a_stopping_serve_sends_each_websocket_a_close_frame(tmp_path: Path, kind: str) -> None:
    """Told to stop, the server closes each WebSocket itself (1001, going
    away) before it exits, idle or not: the client reads a Close frame, not
    a dropped connection, and its answering Close ends the agent."""
    from websockets.exceptions import ConnectionClosedOK
    from websockets.sync.client import connect

    port = free_port()
    stderr = tmp_path / "stderr"
    server = start_server(port, kind, tmp_path / "pids", stderr)
    try:
        with connect(f"ws://127.0.0.1:{port}/acp") as socket_:
            socket_.send(
                '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
            )
            assert '"id":1' in str(socket_.recv(timeout=20))
            server.send_signal(signal.SIGTERM)
            with pytest.raises(ConnectionClosedOK):
                while True:
                    socket_.recv(timeout=20)
            assert socket_.close_code == 1001
        assert server.wait(GRACEFUL_SHUTDOWN_SECONDS + 10) == -signal.SIGTERM
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert "Traceback" not in stderr.read_text()
