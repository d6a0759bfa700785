"""docs/migration.md's worked example: both versions of the agent behave alike.

The official-style agent on acp_fast.compat and its port to the native class
API run as real subprocesses, driven by the same acp_fast client; what the
client sees must be identical, allow and reject alike.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import encode, v1
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "docs" / "examples"
MIGRATION = ROOT / "docs" / "migration.md"
AGENTS = ("migrate_compat_agent.py", "migrate_native_agent.py")


class Recorder(acp.BaseClient):
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.seen: list[Any] = []
        self.files = {"/notes.txt": "quiet please\n"}

    async def session_update(self, notification: v1.SessionNotification) -> None:
        self.seen.append(("update", encode(notification.update)))

    async def request_permission(
        self, request: v1.RequestPermissionRequest
    ) -> v1.RequestPermissionResponse:
        self.seen.append(("permission", [o.option_id for o in request.options]))
        return h.permission_selected(self.answer)

    async def read_text_file(self, request: v1.ReadTextFileRequest) -> v1.ReadTextFileResponse:
        self.seen.append(("read", request.path))
        return v1.ReadTextFileResponse(content=self.files[request.path])

    async def write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse:
        self.seen.append(("write", request.path, request.content))
        self.files[request.path] = request.content
        return v1.WriteTextFileResponse()


async def drive(agent: str, answer: str, backend: str) -> tuple[list[Any], str, Any]:
    client = Recorder(answer)
    command = [sys.executable, str(EXAMPLES / agent), backend]
    with anyio.fail_after(TIMEOUT):
        async with acp.spawn_agent(client, command) as conn:
            await conn.initialize()
            session = await conn.new_session(cwd="/w")
            result = await conn.prompt(session.session_id, "/notes.txt")
            version = await conn.send_request(acp.UntypedMessage("_shout/version", {}))
    return client.seen, result.stop_reason, version


@pytest.mark.parametrize("answer", ["allow", "reject"])
async def test_the_port_behaves_as_the_compat_agent(answer: str, anyio_backend: str) -> None:
    compat, native = [await drive(agent, answer, anyio_backend) for agent in AGENTS]
    assert compat == native
    seen, stop_reason, version = native
    assert version == {"version": 1}
    assert stop_reason == ("end_turn" if answer == "allow" else "refusal")
    assert seen[0] == (
        "update",
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Shouting /notes.txt"}}',
    )
    if answer == "allow":
        assert ("write", "/notes.txt", "QUIET PLEASE\n") in seen


def test_the_guide_shows_both_versions() -> None:
    guide = MIGRATION.read_text()
    for agent in AGENTS:
        body = (EXAMPLES / agent).read_text().split('"""', 2)[2].strip()
        assert body in guide, f"docs/migration.md does not show {agent} as it is"
