"""acp_fast.compat against the reference SDKs, over real subprocesses and pipes.

The official-SDK peers (peers/py_agent.py, peers/py_client.py) are programs
written for ``agent-client-protocol`` 0.12.1. ``compat_run.py`` runs them
unmodified with ``import acp`` resolving to ``acp_fast.compat``, which is
exactly the migration the compatibility layer promises (change the imports,
nothing else). Each is driven by, or drives, the *real* official SDK, the
TypeScript SDK and acp_fast's native client, through the contract of
peers/README.md.

What changes on acp_fast: the compat agent honours ``$/cancel_request`` (the
TS client's cancel of ``_test/slow`` is answered -32800 instead of the
official SDK's late result), and the compat client's local give-up on
``_test/slow`` sends one.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.interop.acpfast_client import BIG_SIZE, run_contract
from tests.interop.contract import PERMISSIONS, TOOL_UPDATES, WRITES

pytestmark = pytest.mark.interop

HERE = Path(__file__).resolve().parent
COMPAT_RUN = str(HERE / "compat_run.py")


@pytest.fixture(scope="module")
def compat_agent_cmd() -> list[str]:
    """The official-SDK agent peer, run on acp_fast.compat."""
    return [sys.executable, COMPAT_RUN, str(HERE / "peers" / "py_agent.py")]


@pytest.fixture(scope="module")
def compat_client_cmd() -> list[str]:
    """The official-SDK client peer, run on acp_fast.compat (append the agent)."""
    return [sys.executable, COMPAT_RUN, str(HERE / "peers" / "py_client.py")]


def check_report(report: dict[str, object] | None, *, client: str) -> dict[str, object]:
    assert report is not None
    assert report["client"] == client
    assert report["ok"] is True, report
    hello = report["hello"]
    assert isinstance(hello, dict)
    assert hello["chunks"] == ["Hello", " world", "done"]
    assert hello["permissions"] == PERMISSIONS
    assert hello["toolUpdates"] == TOOL_UPDATES
    assert hello["writes"] == WRITES
    assert report["agentExit"] == {"code": 0, "signal": None}
    return report


def test_official_sdk_client_drives_compat_agent(run_client_peer, py_client_cmd, compat_agent_cmd):
    run = run_client_peer(py_client_cmd, compat_agent_cmd)
    report = check_report(run.report, client="py")
    assert report["initialize"]["protocolVersion"] == 1  # type: ignore[index]
    cancel = report["cancelRequest"]
    assert isinstance(cancel, dict) and cancel["outcome"] == "timeout"


def test_ts_sdk_client_drives_compat_agent(run_client_peer, ts_client_cmd, compat_agent_cmd):
    run = run_client_peer(ts_client_cmd, compat_agent_cmd)
    report = check_report(run.report, client="ts")
    # The official-style ext_method is cancelled by $/cancel_request on acp_fast.
    cancel = report["cancelRequest"]
    assert isinstance(cancel, dict)
    assert cancel["outcome"] == "error"
    assert cancel["error"]["code"] == -32800


def test_compat_client_drives_official_sdk_agent(run_client_peer, compat_client_cmd, py_agent_cmd):
    run = run_client_peer(compat_client_cmd, py_agent_cmd)
    check_report(run.report, client="py")
    # The compat client gave up after 0.2 s and said so on the wire; the
    # official agent does not know $/cancel_request and logs it.
    assert "method=$/cancel_request" in run.stderr


def test_compat_client_drives_ts_sdk_agent(run_client_peer, compat_client_cmd, ts_agent_cmd):
    run = run_client_peer(compat_client_cmd, ts_agent_cmd)
    check_report(run.report, client="py")


def test_compat_client_drives_compat_agent(run_client_peer, compat_client_cmd, compat_agent_cmd):
    run = run_client_peer(compat_client_cmd, compat_agent_cmd)
    check_report(run.report, client="py")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_acpfast_client_drives_compat_agent(compat_agent_cmd, backend):
    started = time.monotonic()
    report = anyio.run(run_contract, compat_agent_cmd, backend=backend)
    assert time.monotonic() - started < 15
    assert report.protocol_version == 1
    assert report.session_id is not None and report.session_id.startswith("py-")
    assert report.hello is not None and report.hello.chunks == ["Hello", " world", "done"]
    assert report.hello.tool_updates == TOOL_UPDATES
    # $/cancel_request stops the official-style handler: -32800.
    assert report.cancel_outcome == "error"
    assert report.cancel_error is not None and report.cancel_error["code"] == -32800
    assert report.wait is not None and report.wait.stop_reason == "cancelled"
    assert report.big is not None and report.big.chunks == [f"len={BIG_SIZE}"]
    assert report.agent_returncode == 0, report.agent_stderr
