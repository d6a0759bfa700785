"""``acp.stdio()`` whatever stdin and stdout are: pipes, a socket, a tty,
regular files, /dev/null; and ``protect_stdout``.

Each test runs the peer agent (tests/transports/peer.py) as a real child
process with the given kind of stdin/stdout. ``_t/flags`` reports whether
the child's fd 0 and fd 1 are still in blocking mode while it serves: the
descriptions are shared with us (and, for a real agent, with its client or
the user's shell), so acp_fast must not have made them non-blocking.
"""

from __future__ import annotations

import functools
import os
import pty
import socket
import subprocess
import tty
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

import acp_fast as acp
from tests.transports.scenarios import Peer, as_client, peer_cmd

pytestmark = pytest.mark.anyio

EXIT_TIMEOUT = 10.0
STILL_BLOCKING = {"stdin_blocking": True, "stdout_blocking": True}


def spawn(command: list[str], stdin: int, stdout: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, stdin=stdin, stdout=stdout)


async def wait_exit(process: subprocess.Popen[bytes]) -> int:
    return await anyio.to_thread.run_sync(functools.partial(process.wait, EXIT_TIMEOUT))


async def test_pipes(anyio_backend: str) -> None:
    agent = acp.Subprocess(peer_cmd(anyio_backend))

    async def main(peer: Peer) -> None:
        await peer.echo()
        assert await peer.call("_t/flags") == STILL_BLOCKING

    await as_client(agent, main)
    assert agent.returncode == 0


async def test_socket(anyio_backend: str) -> None:
    """stdin and stdout are one socket (as under inetd or systemd socket activation)."""
    ours, theirs = socket.socketpair()
    with theirs:
        process = spawn(peer_cmd(anyio_backend), theirs.fileno(), theirs.fileno())

    async def main(peer: Peer) -> None:
        await peer.echo()
        assert await peer.call("_t/flags") == STILL_BLOCKING
        await peer.big()

    try:
        await as_client(acp.SocketTransport(ours), main)
    finally:
        assert await wait_exit(process) == 0


async def test_tty(anyio_backend: str) -> None:
    """stdin and stdout are a terminal (in raw mode: no echo, no line editing)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    try:
        process = spawn(peer_cmd(anyio_backend), slave, slave)
    finally:
        os.close(slave)

    async def main(peer: Peer) -> None:
        await peer.echo()
        await peer.echo("x" * 20_000)  # more than a tty's 4 KiB line buffer
        assert await peer.call("_t/flags") == STILL_BLOCKING

    try:
        await as_client(acp.FdTransport(master, master, close=True), main)
    finally:
        # Closing the master ends the child's input: it exits by itself.
        assert await wait_exit(process) == 0


def run_with_files(tmp_path: Path, requests: list[dict[str, Any]], *options: str) -> Any:
    """Run the peer with stdin and stdout (and stderr) as regular files."""
    stdin = tmp_path / "stdin.ndjson"
    stdin.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in requests))
    with (
        stdin.open("rb") as fin,
        (tmp_path / "stdout").open("wb") as fout,
        (tmp_path / "stderr").open("wb") as ferr,
    ):
        done = subprocess.run(
            peer_cmd("asyncio", *options),
            stdin=fin,
            stdout=fout,
            stderr=ferr,
            timeout=EXIT_TIMEOUT,
            check=False,
        )
    return (
        done.returncode,
        (tmp_path / "stdout").read_bytes(),
        (tmp_path / "stderr").read_text(),
    )


def request(id: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def test_regular_files(tmp_path: Path) -> None:
    """Requests read from a file, answers written to a file; EOF ends the agent."""
    requests = [request(i, "_t/echo", {"n": i}) for i in range(100)]
    requests.append(request(100, "_t/flags", {}))
    code, out, err = run_with_files(tmp_path, requests)
    assert code == 0, err
    answers = [orjson.loads(line) for line in out.splitlines()]
    assert answers[:100] == [{"jsonrpc": "2.0", "id": i, "result": {"n": i}} for i in range(100)]
    assert answers[100] == {"jsonrpc": "2.0", "id": 100, "result": STILL_BLOCKING}


def test_dev_null_stdin() -> None:
    """/dev/null cannot be polled (epoll refuses it): it reads as EOF at once."""
    done = subprocess.run(
        peer_cmd("trio"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=EXIT_TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, b""), done.stderr


def test_protect_stdout_keeps_stray_prints_off_the_protocol(tmp_path: Path) -> None:
    """With protect_stdout, print() goes to stderr while the connection runs,
    and stdout is back in place afterwards."""
    requests = [
        request(1, "_t/echo", {"before": True}),
        request(2, "_t/print", {"text": "a stray print"}),
        request(3, "_t/echo", {"after": True}),
    ]
    code, out, err = run_with_files(tmp_path, requests, "--protect-stdout", "--after", "bye")
    assert code == 0, err
    lines = out.splitlines()
    assert [orjson.loads(line) for line in lines[:3]] == [
        {"jsonrpc": "2.0", "id": 1, "result": {"before": True}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
        {"jsonrpc": "2.0", "id": 3, "result": {"after": True}},
    ]
    assert lines[3:] == [b"bye"]  # printed after the connection: fd 1 restored
    assert "a stray print" in err


async def test_protect_stdout_over_a_pipe(anyio_backend: str) -> None:
    lines: list[str] = []
    agent = acp.Subprocess(peer_cmd(anyio_backend, "--protect-stdout"), stderr=lines.append)

    async def main(peer: Peer) -> None:
        await peer.call("_t/print", {"text": "{not json"})
        await peer.echo()
        assert await peer.call("_t/flags") == STILL_BLOCKING

    await as_client(agent, main)
    assert agent.returncode == 0
    assert lines == ["{not json"]


async def test_a_stray_print_is_named_in_the_agents_log(anyio_backend: str) -> None:
    """Without protect_stdout, a print() reaches the client as a line that is
    not JSON; the client's parse error comes back under ``id: null``, and the
    agent's log says what probably happened instead of "unknown id None"."""
    lines: list[str] = []
    agent = acp.Subprocess(peer_cmd(anyio_backend), stderr=lines.append)

    async def main(peer: Peer) -> None:
        await peer.call("_t/print", {"text": "debug: a stray print"})
        await peer.echo()  # read by the agent after the parse error

    await as_client(agent, main)
    assert agent.returncode == 0
    hints = [line for line in lines if "could not parse a line" in line]
    assert len(hints) == 1, lines
    assert "debug: a stray print" in hints[0]
    assert "protect_stdout=True" in hints[0]
    assert not [line for line in lines if "unknown id" in line]
