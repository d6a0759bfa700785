"""How ``acp-fast trace --out FILE -- AGENT_CMD...`` ends (docs/tracing.md):
signalled as an editor would stop it, or with its agent. Real processes over
real pipes; the agent runs on asyncio and trio, the tap on both cores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import AGENT_SCRIPT, PROCESS_TIMEOUT, read_trace

CORES = [pytest.param("", id="c", marks=pytest.mark.c_extension), pytest.param("1", id="py")]


def start_tap(out: Path, agent: list[str], no_ext: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ACP_FAST_NO_EXTENSIONS": no_ext}
    return subprocess.Popen(
        [sys.executable, "-m", "acp_fast", "trace", "--out", str(out), "--", *agent],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def finish(tap: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    """The tap's exit status and stderr. The agent shares that stderr, so
    its end is read only once the agent is gone too."""
    _, stderr = tap.communicate(timeout=PROCESS_TIMEOUT)
    return tap.returncode, stderr


def echo_request(n: int) -> bytes:
    message = {"jsonrpc": "2.0", "id": n, "method": "test/simple", "params": {"message": n}}
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("no_ext", CORES)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_tap_records_everything_and_stops_the_agent(
    signum: int, backend: str, no_ext: str, tmp_path: Path
) -> None:
    path = tmp_path / "tap.jsons"
    tap = start_tap(path, [sys.executable, str(AGENT_SCRIPT), backend], no_ext)
    assert tap.stdin is not None and tap.stdout is not None
    count = 50
    tap.stdin.write(b"".join(echo_request(n) for n in range(count)))
    tap.stdin.flush()
    # Every answer came back through the tap: each line passed both ways.
    answers = [json.loads(tap.stdout.readline()) for _ in range(count)]
    assert [answer["id"] for answer in answers] == list(range(count))
    tap.send_signal(signum)
    status, stderr = finish(tap)
    assert status == 128 + signum
    assert b"Traceback" not in stderr, stderr.decode()
    events, summary = read_trace(path)
    assert summary["recorded"] == 2 * count and summary["dropped"] == 0
    assert [e["id"] for e in events if e["dir"] == "out"] == list(range(count))
    assert [e["id"] for e in events if e["dir"] == "in"] == list(range(count))


IGNORES_SIGTERM = (
    "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', file=sys.stderr, flush=True); sys.stdin.read()"
)


@pytest.mark.parametrize("no_ext", CORES)
def test_an_agent_that_ignores_sigterm_is_killed(no_ext: str, tmp_path: Path) -> None:
    path = tmp_path / "tap.jsons"
    tap = start_tap(path, [sys.executable, "-c", IGNORES_SIGTERM], no_ext)
    assert tap.stderr is not None
    assert tap.stderr.readline() == b"ready\n"  # its SIGTERM is ignored from here on
    tap.send_signal(signal.SIGTERM)
    status, _ = finish(tap)  # returns: the agent's end of stderr is closed
    assert status == 143
    events, summary = read_trace(path)
    assert events == [] and summary["recorded"] == 0


@pytest.mark.parametrize("no_ext", CORES)
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("import sys; sys.exit(3)", 3),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + signal.SIGKILL),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 128 + signal.SIGTERM),
    ],
)
def test_the_tap_exits_as_its_agent_did(
    code: str, status: int, no_ext: str, tmp_path: Path
) -> None:
    path = tmp_path / "tap.jsons"
    agent = [
        sys.executable,
        "-c",
        f'print(\'{{"jsonrpc":"2.0","method":"a"}}\', flush=True); {code}',
    ]
    tap = start_tap(path, agent, no_ext)
    assert finish(tap)[0] == status
    events, summary = read_trace(path)
    assert [e["method"] for e in events] == ["a"] and summary["recorded"] == 1


@pytest.mark.parametrize("no_ext", CORES)
def test_a_request_is_recorded_before_its_answer(no_ext: str, tmp_path: Path) -> None:
    """The tap records a line before passing it on, so the answer (recorded
    by the other direction's thread) can never come first in the trace."""
    path = tmp_path / "tap.jsons"
    tap = start_tap(path, [sys.executable, str(AGENT_SCRIPT), "asyncio"], no_ext)
    assert tap.stdin is not None and tap.stdout is not None
    count = 1000
    for n in range(count):  # one at a time: each waits for its answer
        tap.stdin.write(echo_request(n))
        tap.stdin.flush()
        assert json.loads(tap.stdout.readline())["id"] == n
    status, _ = finish(tap)
    assert status == 0
    events, _ = read_trace(path)
    assert [(e["dir"], e["id"]) for e in events] == [
        (direction, n) for n in range(count) for direction in ("out", "in")
    ]
