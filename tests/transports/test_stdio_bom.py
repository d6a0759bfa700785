"""A UTF-8 byte-order mark before the first request, over a real agent
process's stdin (docs/semantics.md §1.4): the request is answered."""

from __future__ import annotations

import subprocess
import sys

import anyio
import orjson
import pytest

pytestmark = pytest.mark.anyio


async def test_the_example_agent_answers_a_first_request_behind_a_bom(anyio_backend):
    initialize = orjson.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    with anyio.fail_after(30):
        process = await anyio.run_process(
            [sys.executable, "-m", "acp_fast", "example-agent", "--backend", anyio_backend],
            input=b"\xef\xbb\xbf" + initialize + b"\n",
            stderr=subprocess.PIPE,
            check=False,
        )
    assert process.returncode == 0, process.stderr
    [answer] = [orjson.loads(line) for line in process.stdout.splitlines()]
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == 1
