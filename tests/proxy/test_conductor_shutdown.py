"""The conductor never outlives its client, nor leaves children behind
(docs/proxies.md): on the client closing its input while an agent that
never reads holds the chain back, and on SIGTERM/SIGINT; as the CLI and as
a library (``Conductor.serve``). Real processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

BACKENDS = ["asyncio", "trio"]
WAIT = 30.0  # bounds every wait below; the shutdown takes a few grace periods


# A program of a library user's: a Conductor served on its stdio, no CLI.
LIBRARY_CONDUCTOR = """
import sys, anyio, acp_fast as acp
from acp_fast.conductor import Conductor
conductor = Conductor(agent=["sleep", "600"], grace_period=0.5)
anyio.run(conductor.serve, acp.stdio(), backend=sys.argv[1])
"""


def start_conductor(backend: str, library: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    if library:
        argv = [sys.executable, "-c", LIBRARY_CONDUCTOR, backend]
    else:
        argv = [sys.executable, "-m", "acp_fast", "conductor", "--agent", "sleep 600"]
        argv += ["--backend", backend]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, child_of(process.pid)


def child_of(pid: int) -> int:
    """The agent the conductor started (its pid, once it runs)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for child in children.read_text().split():
            # The agent, not a helper an import runs (ldconfig, say).
            with contextlib.suppress(FileNotFoundError):
                if Path(f"/proc/{child}/cmdline").read_bytes().startswith(b"sleep\0"):
                    return int(child)
        time.sleep(0.02)  # polling another process: no barrier to wait on
    raise AssertionError("the conductor started no agent")


def is_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def stop_if_alive(process: subprocess.Popen[bytes], child: int) -> None:
    for pid in (process.pid, child):
        if is_alive(pid):
            os.kill(pid, signal.SIGKILL)
    process.wait(WAIT)
    for stream in (process.stdin, process.stderr):
        if stream is not None:
            stream.close()


def fill_until_the_conductor_stops_reading(process: subprocess.Popen[bytes]) -> int:
    """Write notifications until the conductor stops taking them (the agent
    never reads, so the conductor holds back); returns the bytes written."""
    assert process.stdin is not None
    fd = process.stdin.fileno()
    os.set_blocking(fd, False)
    line = orjson.dumps({"jsonrpc": "2.0", "method": "_x/n", "params": {"p": "x" * 1000}}) + b"\n"
    written = 0
    stalled_since = None
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            written += os.write(fd, line)
            stalled_since = None
        except BlockingIOError:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > 0.5:
                return written
            time.sleep(0.01)
    raise AssertionError("the conductor kept reading")


@pytest.mark.parametrize("library", [False, True], ids=["cli", "library"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_client_closing_its_input_ends_the_conductor_and_its_agent(backend, library):
    process, child = start_conductor(backend, library)
    try:
        assert fill_until_the_conductor_stops_reading(process) > 100_000
        assert process.stdin is not None
        process.stdin.close()
        code = process.wait(WAIT)
        assert process.stderr is not None
        err = process.stderr.read().decode()
        assert code == 0, err
        assert not is_alive(child)
        assert "the client closed its input" in err
    finally:
        stop_if_alive(process, child)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_signal_ends_the_conductor_and_its_agent(backend, signum):
    process, child = start_conductor(backend)
    try:
        process.send_signal(signum)
        code = process.wait(WAIT)
        assert process.stderr is not None
        err = process.stderr.read().decode()
        assert code == 128 + signum, err
        assert not is_alive(child)
        assert signal.Signals(signum).name in err
    finally:
        stop_if_alive(process, child)
