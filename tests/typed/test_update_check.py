"""An agent's ``session_update`` refuses what is not a session update, before
anything is sent, and names the mistake (v1 and v2)."""

from __future__ import annotations

import os
from typing import Any

import anyio
import anyio.to_thread
import pytest

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast._typed import v2 as typed_v2
from acp_fast.compat import helpers as compat_helpers
from acp_fast.schema import v1, v1_unstable, v2
from tests.typed.test_class_api import Client, pair
from tests.typed.test_v2 import INFO, ClientV2
from tests.typed.test_v2 import pair as pair_v2

pytestmark = pytest.mark.anyio

V1_MISTAKES: list[tuple[Any, Any, str]] = [
    ("SID", "hello", "wants a v1.SessionUpdate (e.g. v1.SessionUpdateAgentMessageChunk, "),
    ("SID", "hello", "not str 'hello'"),
    ("SID", None, "not NoneType None"),
    ("SID", h.text("hi"), "not a content block (v1.ContentBlockText): wrap it, e.g. "),
    (
        "SID",
        v1_unstable.ContentBlockText(text="hi"),
        "not a content block (v1_unstable.ContentBlockText)",
    ),
    ("SID", compat_helpers.text_block("hi"), "not a content block (schema.TextContentBlock)"),
    ("SID", v1.NewSessionResponse(session_id="x"), "not NewSessionResponse "),
    (h.agent_text("hi"), "SID", "wants the session id (a str) first, not "),
    (7, h.agent_text("hi"), "wants the session id (a str) first, not int 7"),
]


class CheckedAgent(acp.BaseAgent):
    """Tries each mistake in its prompt, then sends one good update."""

    def __init__(self, mistakes: list[tuple[Any, Any, str]]) -> None:
        self.mistakes = mistakes
        self.refused: list[str] = []

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id="s1")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        for session_id, update, _ in self.mistakes:
            session_id = request.session_id if session_id == "SID" else session_id
            update = request.session_id if update == "SID" else update
            with pytest.raises(TypeError) as refused:
                await self.client.session_update(session_id, update)
            self.refused.append(str(refused.value))
        # What passes: an update, a subclass of one, a dict (sent as it is).
        await self.client.session_update(request.session_id, h.agent_text("good"))
        await self.client.session_update(request.session_id, Chunk(content=h.text("sub")))
        await self.client.session_update(
            request.session_id,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "dict"}},
        )
        # The unstable classes (what an unstable agent decodes to) and compat's models.
        await self.client.session_update(
            request.session_id,
            v1_unstable.SessionUpdateAgentMessageChunk(
                content=v1_unstable.ContentBlockText(text="unstable")
            ),
        )
        await self.client.session_update(
            request.session_id, compat_helpers.update_agent_message_text("compat")
        )
        return v1.PromptResponse(stop_reason="end_turn")


class Chunk(v1.SessionUpdateAgentMessageChunk, tag="agent_message_chunk"):
    pass


async def test_v1_session_update_refuses_what_is_not_an_update_and_sends_nothing() -> None:
    agent, client = CheckedAgent(V1_MISTAKES), Client()
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        result = await conn.prompt(session.session_id, "go")
    assert result.stop_reason == "end_turn"
    for (_, _, expected), message in zip(V1_MISTAKES, agent.refused, strict=True):
        assert expected in message
    # Only what passed the check reached the client, in order.
    assert client.updates == [
        ("s1", "good"),
        ("s1", "sub"),
        ("s1", "dict"),
        ("s1", "unstable"),
        ("s1", "compat"),
    ]


class CheckedAgentV2(typed_v2.BaseAgentV2):
    def __init__(self) -> None:
        self.refused: list[str] = []

    async def new_session(self, request: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="v2-session")

    async def prompt(self, request: v2.PromptRequest) -> str:
        block = v2.ContentBlockText(text="hi")
        for update in ("hello", block, h.agent_text("a v1 update")):
            with pytest.raises(TypeError) as refused:
                await self.client.session_update(request.session_id, update)  # type: ignore[arg-type]
            self.refused.append(str(refused.value))
        chunk = v2.SessionUpdateAgentMessageChunk(message_id="m1", content=block)
        await self.client.session_update(request.session_id, chunk)
        return "end_turn"


async def test_v2_session_update_refuses_what_is_not_a_v2_update() -> None:
    agent, client = CheckedAgentV2(), ClientV2()
    async with pair_v2(agent, client) as conn:
        await conn.initialize(INFO)
        session = await conn.new_session(cwd="/")
        await conn.prompt(session.session_id, "go")
    assert "wants a v2.SessionUpdate" in agent.refused[0]
    assert "not str 'hello'" in agent.refused[0]
    assert "not a content block (v2.ContentBlockText)" in agent.refused[1]
    assert "not SessionUpdateAgentMessageChunk " in agent.refused[2]  # v1's, not v2's
    assert "chunk:hi" in client.updates


async def test_an_update_line_is_byte_for_byte_what_send_notification_writes() -> None:
    """``session_update`` splices the encoded update into a per-session line
    head (docs/architecture.md); the bytes are those of the general path,
    for ids that need escaping and past the head cache's bound."""
    from acp_fast._async._wire import encode_notification
    from acp_fast._typed.agent import _MAX_UPDATE_HEADS, ClientConnection

    agent_in, peer_out = os.pipe()
    peer_in, agent_out = os.pipe()
    session_ids = [
        's-"quoted"\\',
        "s-\u2028-\U0001f600",
        *(f"s{n}" for n in range(_MAX_UPDATE_HEADS + 2)),
    ]
    updates: list[Any] = [
        h.agent_text("one"),
        h.tool_call("call-1", "Read", kind="read"),
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "d"}},
    ]
    expected = b"".join(
        encode_notification(
            "session/update", v1.SessionNotification(session_id=session_id, update=update)
        )
        for session_id in [*session_ids, session_ids[0]]
        for update in updates
    )

    async def send_all(cx: acp.ConnectionTo[Any]) -> None:
        client = ClientConnection(cx)
        for session_id in [*session_ids, session_ids[0]]:  # the first again, after the bound
            for update in updates:
                await client.session_update(session_id, update)

    def read_all() -> bytes:
        chunks = []
        while chunk := os.read(peer_in, 65536):
            chunks.append(chunk)
        return b"".join(chunks)

    async with anyio.create_task_group() as group:
        written: list[bytes] = []

        async def reader() -> None:
            written.append(await anyio.to_thread.run_sync(read_all))

        group.start_soon(reader)
        transport = acp.FdTransport(agent_in, agent_out, close=True)
        await acp.Agent.builder().connect_with(transport, send_all)
    os.close(peer_in)
    os.close(peer_out)
    assert written[0] == expected
