"""An agent that dies at start-up: the requests waiting on it say how it
ended (docs/semantics.md §1.3): exit status or signal, its last stderr lines,
and what it wrote to stdout that was not JSON. Real processes."""

from __future__ import annotations

import sys

import anyio
import pytest

import acp_fast as acp

pytestmark = pytest.mark.anyio

DIES = """
import sys
print("starting up, not JSON")
sys.stdout.flush()
sys.stderr.write("Traceback (most recent call last):\\nValueError: bad config\\n")
sys.exit(3)
"""

KILLED = """
import os, signal, sys
sys.stderr.write("about to be killed\\n")
sys.stderr.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


async def initialize_error(script: str, passed_through: bool = False) -> acp.Error:
    lines: list[str] = []
    stderr = None if passed_through else lines.append
    with anyio.fail_after(30):
        async with acp.connect_to_agent(
            acp.BaseClient(), acp.Subprocess([sys.executable, "-c", script], stderr=stderr)
        ) as agent:
            with pytest.raises(acp.Error) as caught:
                await agent.initialize()
    return caught.value


@pytest.mark.parametrize("passed_through", [False, True], ids=["callback", "our-stderr"])
async def test_exit_status_stderr_and_stdout_are_in_the_error(passed_through, capfd):
    error = await initialize_error(DIES, passed_through)
    if passed_through:
        assert "ValueError: bad config" in capfd.readouterr().err  # still passed through
    assert acp.is_incoming_transport_closed(error)
    assert error.data["exitStatus"] == 3
    assert error.data["stderr"] == ["Traceback (most recent call last):", "ValueError: bad config"]
    assert error.data["stdout"] == ["starting up, not JSON"]
    assert "ValueError: bad config" in str(error)


async def test_the_signal_that_killed_it_is_in_the_error():
    error = await initialize_error(KILLED)
    assert error.data["exitStatus"] == -9
    assert error.data["signal"] == "SIGKILL"
    assert error.data["stderr"] == ["about to be killed"]
    assert "SIGKILL" in str(error)
