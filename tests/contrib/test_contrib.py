"""acp_fast.contrib: the accumulator, the tool-call tracker, the permission broker."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.contrib import PermissionBroker, SessionAccumulator, ToolCallTracker
from acp_fast.schema import UnknownVariant, v1
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class Agent(acp.BaseAgent):
    def __init__(self) -> None:
        self.replies: list[str | None] = []

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        sid = request.session_id
        tools = ToolCallTracker(self.client, sid)
        await self.client.session_update(sid, h.agent_thought("thinking"))
        await self.client.session_update(sid, h.agent_text("Hello"))
        await self.client.session_update(sid, h.agent_text(" world"))
        await self.client.session_update(sid, h.plan(["read", "edit"]))
        for _ in range(2):
            call = await tools.start("Edit a.py", kind="edit", locations=["a.py"])
            reply = await self.client.request_permission(
                sid, call.ref(), h.allow_or_reject(always=True)
            )
            self.replies.append(h.selected_option(reply))
            await call.update(status="in_progress")
            await call.complete(content=[h.text_content("edited")])
        with pytest.raises(ValueError, match="boom"):
            async with tools.run("Run tests", kind="execute"):
                raise ValueError("boom")
        async with tools.run("Lint", kind="execute") as lint:
            assert lint.status == "in_progress"
        return v1.PromptResponse(stop_reason="end_turn")


class Client(acp.BaseClient):
    def __init__(self, broker: PermissionBroker) -> None:
        self.sessions = SessionAccumulator()
        self.broker = broker

    async def session_update(self, notification: v1.SessionNotification) -> None:
        self.sessions.apply(notification)

    async def request_permission(
        self, request: v1.RequestPermissionRequest
    ) -> v1.RequestPermissionResponse:
        return await self.broker.decide(request)


@asynccontextmanager
async def connected(agent: Any, client: Any) -> AsyncIterator[acp.AgentConnection]:
    agent_end, client_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(acp.serve_agent, agent, agent_end)
        async with acp.connect_to_agent(client, client_end) as conn:
            yield conn
        tg.cancel_scope.cancel()


async def test_a_turn_folds_into_state_and_an_always_choice_is_remembered() -> None:
    asked: list[str] = []

    async def ask(request: v1.RequestPermissionRequest) -> str:
        asked.append(request.tool_call.tool_call_id)
        return "allow"  # the allow_always option

    agent, client = Agent(), Client(PermissionBroker(ask))
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            await conn.prompt("s1", "go")
    # The user was asked once; the second edit used the remembered choice.
    assert asked == ["call-1"]
    assert agent.replies == ["allow", "allow"]
    assert client.broker.remembered == {"kind:edit": "allow"}
    state = client.sessions.state("s1")
    assert state.agent_text() == "Hello world"
    assert len(state.messages) == 1 and state.messages[0].role == "agent"
    assert [m.text() for m in state.thoughts] == ["thinking"]
    assert [e.content for e in state.plan] == ["read", "edit"]
    calls = state.tool_calls
    assert list(calls) == ["call-1", "call-2", "call-3", "call-4"]
    assert [c.status for c in calls.values()] == ["completed", "completed", "failed", "completed"]
    assert calls["call-1"].title == "Edit a.py" and calls["call-1"].kind == "edit"
    assert calls["call-1"].locations == [v1.ToolCallLocation(path="a.py")]
    assert calls["call-1"].content == [h.text_content("edited")]
    assert calls["call-3"].content == [h.text_content("ValueError: boom")]


def test_the_accumulator_keeps_mode_commands_title_and_unknown_updates() -> None:
    sessions = SessionAccumulator()

    def apply(update: Any) -> None:
        sessions.apply(v1.SessionNotification(session_id="s", update=update))

    apply(v1.SessionUpdateCurrentModeUpdate(current_mode_id="code"))
    apply(
        v1.SessionUpdateAvailableCommandsUpdate(
            available_commands=[v1.AvailableCommand(name="test", description="Run")]
        )
    )
    apply(v1.SessionUpdateSessionInfoUpdate(title="Fix bug"))
    apply(h.user_text("hi"))
    apply(h.agent_text("a"))
    apply(v1.SessionUpdateAgentMessageChunk(content=h.text("b"), message_id="m2"))
    apply(v1.SessionUpdateToolCallUpdate(tool_call_id="late", status="in_progress"))
    apply(UnknownVariant({"sessionUpdate": "_future"}, "sessionUpdate"))
    state = sessions.state("s")
    assert state.current_mode_id == "code"
    assert [c.name for c in state.available_commands] == ["test"]
    assert state.title == "Fix bug"
    assert [(m.role, m.text(), m.message_id) for m in state.messages] == [
        ("user", "hi", None),
        ("agent", "a", None),
        ("agent", "b", "m2"),
    ]
    assert state.tool_calls["late"].status == "in_progress"
    assert state.unknown == [{"sessionUpdate": "_future"}]
    sessions.forget("s")
    assert "s" not in sessions.sessions


async def test_the_policy_answers_first_and_cancel_gives_the_cancelled_outcome() -> None:
    release = anyio.Event()

    async def ask(request: v1.RequestPermissionRequest) -> str | None:
        release.set()
        await anyio.sleep_forever()
        return None

    def policy(request: v1.RequestPermissionRequest) -> str | None:
        return "reject" if request.tool_call.kind == "delete" else None

    broker = PermissionBroker(ask, policy=policy)
    deleting = v1.RequestPermissionRequest(
        session_id="s",
        tool_call=h.tool_call_ref("d", kind="delete"),
        options=h.allow_or_reject(),
    )
    assert h.selected_option(await broker.decide(deleting)) == "reject"
    editing = v1.RequestPermissionRequest(
        session_id="s", tool_call=h.tool_call_ref("e", kind="edit"), options=h.allow_or_reject()
    )
    results: list[v1.RequestPermissionResponse] = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:

            async def decide() -> None:
                results.append(await broker.decide(editing))

            tg.start_soon(decide)
            await release.wait()
            broker.cancel("s")
    assert results == [h.permission_cancelled()]
    assert broker.remembered == {}
