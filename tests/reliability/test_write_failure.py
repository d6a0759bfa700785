"""A write that fails for good (stdout on /dev/full) is never silent: it is
logged at error level and the process exits non-zero (docs/semantics.md §2.7).
Real processes, their stdout on the real /dev/full."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import orjson
import pytest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full"),
]

INITIALIZE = orjson.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
)

RUN_AGENT = "import sys, acp_fast as acp; acp.run_agent(acp.BaseAgent(), backend=sys.argv[1])"


async def run_with_stdout_on_dev_full(command: list[str]) -> tuple[int, str]:
    with open("/dev/full", "wb") as full:  # noqa: ASYNC230 (a device: never blocks)
        with anyio.fail_after(30):
            process = await anyio.run_process(
                command,
                input=INITIALIZE + b"\n",
                stdout=full,
                stderr=subprocess.PIPE,
                check=False,
            )
    return process.returncode, process.stderr.decode("utf-8", "replace")


async def test_run_agent_exits_non_zero_and_logs_when_stdout_is_full(anyio_backend):
    code, stderr = await run_with_stdout_on_dev_full(
        [sys.executable, "-c", RUN_AGENT, anyio_backend]
    )
    assert code != 0
    assert "transport write failed" in stderr
    assert "No space left on device" in stderr


async def test_the_cli_example_agent_exits_non_zero_when_stdout_is_full(anyio_backend):
    code, stderr = await run_with_stdout_on_dev_full(
        [sys.executable, "-m", "acp_fast", "example-agent", "--backend", anyio_backend]
    )
    assert code != 0
    assert "transport write failed" in stderr
