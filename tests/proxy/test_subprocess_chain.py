"""A chain of real processes: client → conductor → 2 proxies → agent.

The conductor is started as ``python -m acp_fast conductor``; it starts the
example proxy (``python -m acp_fast example-proxy``), a pass-through test
proxy and a test agent (``proxy_script.py``, ``agent_script.py``), every
process on the test's backend. A prompt crosses the chain (the example proxy
prefixes the agent's text with ``>``), and a cancelled prompt reaches the
agent as exactly one ``$/cancel_request`` with the agent's own id, while the
-32800 comes back up to the client.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
# Four interpreters start (and import acp_fast) before the first answer.
CHAIN_TIMEOUT = 30.0


def command(*argv: str | Path) -> str:
    return shlex.join(str(part) for part in argv)


def conductor_process(backend: str) -> acp.Subprocess:
    python = sys.executable
    return acp.Subprocess(
        [
            python,
            "-m",
            "acp_fast",
            "conductor",
            "--backend",
            backend,
            "--proxy",
            command(python, "-m", "acp_fast", "example-proxy", "--backend", backend),
            "--proxy",
            command(python, HERE / "proxy_script.py", backend),
            "--agent",
            command(python, HERE / "agent_script.py", backend),
        ]  # fmt: skip
    )


def prompt(text: str) -> v1.PromptRequest:
    return v1.PromptRequest(session_id="chain-session", prompt=[v1.ContentBlockText(text=text)])


async def test_cancel_crosses_a_chain_of_real_processes(anyio_backend: str):
    updates: list[str] = []
    client = acp.Client.builder().name("editor")

    @client.on_receive_notification(v1.SessionNotification)
    async def update(notification: v1.SessionNotification, cx: Any) -> None:
        chunk = notification.update
        if isinstance(chunk, v1.SessionUpdateAgentMessageChunk) and isinstance(
            chunk.content, v1.ContentBlockText
        ):
            updates.append(chunk.content.text)

    conductor = conductor_process(anyio_backend)
    with anyio.fail_after(CHAIN_TIMEOUT):
        async with client.connect(conductor) as cx:
            initialized = await cx.send_request(v1.InitializeRequest(protocol_version=1))
            assert initialized.protocol_version == 1
            session = await cx.send_request(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
            assert session.session_id == "chain-session"

            done = await cx.send_request(prompt("hello"))
            assert done.stop_reason == "end_turn"
            assert updates == [">hello"], "the example proxy is in the path"

            parked = cx.send_request(prompt("park"))
            parked.cancel()
            with pytest.raises(acp.Error) as caught:
                await parked
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED

            # A barrier through the whole chain, then what the agent saw.
            report = await cx.send_request(acp.UntypedMessage("test/report", {}))
    assert len(report["parked"]) == 1
    assert report["parked"][0] != parked.id, "the agent's id is its own"
    assert report["cancels"] == report["parked"], "exactly one cancel, with the agent's id"
    assert conductor.returncode == 0
