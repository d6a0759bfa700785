"""Fixtures for the interop tests: install and locate the reference-SDK peers.

The peers (tests/interop/peers/) are small ACP programs written with the
reference SDKs: ``ts_agent.mjs`` / ``ts_client.mjs`` (TypeScript SDK, needs
Node and ``npm ci``) and ``py_agent.py`` / ``py_client.py`` (the official Python
SDK, installed with the ``test`` extra). See peers/README.md for the contract.

Missing Node or npm is a test *failure*, never a skip: interop coverage must
not silently disappear from CI.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PEERS_DIR = Path(__file__).resolve().parent / "peers"
NPM_CI_TIMEOUT_S = 600


def _require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"`{name}` was not found on PATH. The interop tests need Node.js >= 20 and npm "
            "to run the TypeScript reference peers (tests/interop/peers); install them "
            "(e.g. `apt-get install nodejs npm`) instead of skipping these tests.",
            pytrace=False,
        )
    return path


def _install_is_stale() -> bool:
    """True when node_modules is missing or older than package-lock.json."""
    lock = PEERS_DIR / "package-lock.json"
    # npm writes node_modules/.package-lock.json on every install: its mtime
    # is the time of the last successful install.
    marker = PEERS_DIR / "node_modules" / ".package-lock.json"
    sdk = PEERS_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not marker.exists() or not sdk.exists():
        return True
    return marker.stat().st_mtime < lock.stat().st_mtime


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Serialise installs across concurrent pytest processes (e.g. xdist workers).

    The lock file lives in the temp dir so the work tree stays clean.
    """
    key = hashlib.sha256(str(PEERS_DIR).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"acp_fast-interop-npm-{key}.lock"
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def node_exe() -> str:
    """Absolute path of the `node` binary (fails the test if missing)."""
    return _require_tool("node")


@pytest.fixture(scope="session")
def ts_peers(node_exe: str) -> Path:
    """The peers directory, with the pinned TypeScript SDK installed by `npm ci`."""
    npm = _require_tool("npm")
    with _install_lock():
        if _install_is_stale():
            # `npm ci`, never `npm install`: it installs exactly the lockfile
            # and fails instead of silently re-resolving versions.
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=PEERS_DIR,
                capture_output=True,
                text=True,
                timeout=NPM_CI_TIMEOUT_S,
                check=False,
            )
            if proc.returncode != 0:
                pytest.fail(
                    f"`npm ci` in {PEERS_DIR} failed with exit code {proc.returncode}:\n"
                    f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}",
                    pytrace=False,
                )
            # Make sure the marker is newer than the lockfile even on coarse clocks.
            os.utime(PEERS_DIR / "node_modules" / ".package-lock.json")
    return PEERS_DIR


@pytest.fixture(scope="session")
def ts_agent_cmd(ts_peers: Path, node_exe: str) -> list[str]:
    """argv of the TypeScript-SDK agent peer (talks ACP on stdio)."""
    return [node_exe, str(ts_peers / "ts_agent.mjs")]


@pytest.fixture(scope="session")
def ts_client_cmd(ts_peers: Path, node_exe: str) -> list[str]:
    """argv prefix of the TypeScript-SDK client peer; append the agent's argv."""
    return [node_exe, str(ts_peers / "ts_client.mjs")]


@pytest.fixture(scope="session")
def py_agent_cmd() -> list[str]:
    """argv of the official-Python-SDK agent peer (talks ACP on stdio)."""
    return [sys.executable, str(PEERS_DIR / "py_agent.py")]


@pytest.fixture(scope="session")
def py_client_cmd() -> list[str]:
    """argv prefix of the official-Python-SDK client peer; append the agent's argv."""
    return [sys.executable, str(PEERS_DIR / "py_client.py")]


class PeerRun:
    """Outcome of one client-peer run: exit code, parsed report, stderr."""

    def __init__(self, returncode: int, report: dict[str, Any] | None, stdout: str, stderr: str):
        self.returncode = returncode
        self.report = report
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self) -> str:  # shown by pytest when an assertion on it fails
        return (
            f"PeerRun(returncode={self.returncode}, report={json.dumps(self.report)},\n"
            f"stderr=...{self.stderr[-3000:]})"
        )


@pytest.fixture(scope="session")
def run_client_peer() -> Callable[..., PeerRun]:
    """Run `client_cmd + agent_cmd` as real subprocesses and parse the report line.

    Returns a callable ``run(client_cmd, agent_cmd, timeout=45.0) -> PeerRun``.
    The clients give up on their own after 30 s; ``timeout`` is a backstop that
    kills the client's whole process group (agent included) and yields a
    PeerRun without a report.
    """

    def run(client_cmd: list[str], agent_cmd: list[str], timeout: float = 45.0) -> PeerRun:
        proc = subprocess.Popen(
            [*client_cmd, *agent_cmd],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # own process group, so the agent can be killed too
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            stderr += f"\n[run_client_peer] killed after {timeout} s"
        lines = stdout.strip().splitlines()
        report = None
        if len(lines) == 1:
            with contextlib.suppress(ValueError):
                report = json.loads(lines[0])
        return PeerRun(proc.returncode, report, stdout, stderr)

    return run
