"""Start-up: from spawning an agent to its answer to ``initialize``.

What an editor pays for every window it opens: the interpreter starts, the
SDK is imported, the agent reads the first line and answers it. Both SDKs
serve the smallest agent their documentation shows; acp_fast's is
``acp-fast example-agent``, the official SDK's answers ``initialize`` only.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ("INITIALIZE", "OFFICIAL_AGENT", "command_for", "measure", "spawn_to_answer")

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
    b'"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}}\n'
)

#: An agent on the official SDK, as its README writes one; no acp_fast import.
OFFICIAL_AGENT = """
import asyncio
import acp

class Agent:
    def on_connect(self, conn):
        pass

    async def initialize(self, protocol_version, **_):
        return acp.InitializeResponse(protocol_version=protocol_version)

asyncio.run(acp.run_agent(Agent()))
"""


def command_for(sdk: str, backend: str) -> list[str]:
    """The agent command line for ``sdk`` ("fast" or "official").

    acp_fast's is the ``acp-fast`` script an editor would run, when this
    interpreter's environment has it (``python -m acp_fast`` otherwise).
    """
    if sdk == "official":
        return [sys.executable, "-c", OFFICIAL_AGENT]
    script = Path(sys.executable).with_name("acp-fast")
    launcher = [str(script)] if script.is_file() else [sys.executable, "-m", "acp_fast"]
    return [*launcher, "example-agent", "--backend", backend]


def spawn_to_answer(command: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Seconds from spawning ``command`` to reading its answer to ``initialize``."""
    started = time.perf_counter()
    with subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        # An editor writes at once, without waiting for the agent to be ready.
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        answer = process.stdout.readline()
        elapsed = time.perf_counter() - started
        process.stdin.close()
        process.wait(timeout=30)
    if b'"result"' not in answer:
        raise RuntimeError(f"{command[:4]} did not answer initialize: {answer[:200]!r}")
    return elapsed


def measure(command: Sequence[str], env: dict[str, str] | None = None, count: int = 10) -> float:
    """Median of ``count`` spawns, after one that warms the bytecode caches."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    spawn_to_answer(command, env)
    return statistics.median(spawn_to_answer(command, env) for _ in range(count))


if __name__ == "__main__":
    # python -m acp_fast._bench._startup: the medians without the whole bench.
    for sdk, backend in (("fast", "asyncio"), ("fast", "trio"), ("official", "asyncio")):
        try:
            seconds = measure(command_for(sdk, backend))
        except (RuntimeError, OSError) as exc:
            print(f"{sdk} {backend}: {exc}")
            continue
        print(f"{sdk:8} {backend:8} {seconds * 1e3:6.1f} ms")
