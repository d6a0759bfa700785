"""The class-based typed API: BaseAgent, BaseClient, their connections (v1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1
from acp_fast.testing import memory_pair
from tests.rpc.wire import facing_raw_peer
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class Agent(acp.BaseAgent):
    """Streams three chunks; "ask" asks permission; "wait" waits for cancel."""

    def __init__(self) -> None:
        self.sessions = 0
        self.seen_cwd: list[str] = []
        self.running = 0
        self.max_running = 0
        self.release = anyio.Event()
        self.started = anyio.Event()

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        self.sessions += 1
        self.seen_cwd.append(request.cwd)
        return v1.NewSessionResponse(session_id=f"s{self.sessions}")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        text = request.prompt[0].text  # type: ignore[union-attr]
        sid = request.session_id
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            for n in range(3):
                await self.client.session_update(sid, h.agent_text(f"{text}-{n}"))
            if text == "ask":
                reply = await self.client.request_permission(
                    sid, h.tool_call_ref("t1"), h.allow_or_reject()
                )
                await self.client.session_update(
                    sid, h.agent_text(f"got {h.selected_option(reply)}")
                )
            if text == "wait":
                await anyio.sleep_forever()
            if text == "hold":
                self.started.set()
                await self.release.wait()
            if text == "linger":  # once cancelled, unwinds only when released
                self.started.set()
                try:
                    await anyio.sleep_forever()
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.release.wait()
            return v1.PromptResponse(stop_reason="end_turn")
        finally:
            self.running -= 1

    async def ext_method(self, method: str, params: Any) -> Any:
        return {"method": method, "params": params}


class Client(acp.BaseClient):
    def __init__(self, answer: str | None = "allow") -> None:
        self.updates: list[tuple[str, str]] = []
        self.answer = answer
        self.asked = anyio.Event()

    async def session_update(self, notification: v1.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            self.updates.append((notification.session_id, update.content.text))  # type: ignore[union-attr]

    async def request_permission(
        self, request: v1.RequestPermissionRequest
    ) -> v1.RequestPermissionResponse:
        self.asked.set()
        if self.answer is None:
            await anyio.sleep_forever()
        return h.permission_selected(self.answer)


@asynccontextmanager
async def pair(agent: acp.BaseAgent, client: acp.BaseClient) -> AsyncIterator[acp.AgentConnection]:
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(acp.serve_agent, agent, ours)
        async with acp.connect_to_agent(client, theirs) as connection:
            with anyio.fail_after(TIMEOUT):
                yield connection


async def test_a_prompt_streams_updates_that_are_all_handled_before_it_returns():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        init = await conn.initialize()
        assert init.protocol_version == 1
        session = await conn.new_session(cwd="/project")
        result = await conn.prompt(session.session_id, "hello")
        assert result.stop_reason == "end_turn"
        assert client.updates == [("s1", "hello-0"), ("s1", "hello-1"), ("s1", "hello-2")]


async def test_permission_round_trip():
    agent, client = Agent(), Client(answer="reject")
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        await conn.prompt(session.session_id, "ask")
        assert client.updates[-1] == ("s1", "got reject")


async def test_session_cancel_stops_only_that_sessions_turn():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        first = await conn.new_session(cwd="/a")
        second = await conn.new_session(cwd="/b")
        waiting = conn.start_prompt(first.session_id, "wait")
        holding = conn.start_prompt(second.session_id, "hold")
        await conn.cancel(first.session_id)
        assert (await waiting).stop_reason == "cancelled"
        assert agent.running == 1  # the other session's turn goes on
        agent.release.set()
        assert (await holding).stop_reason == "end_turn"


async def test_cancel_right_behind_the_prompt_is_not_lost():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        turn = conn.start_prompt(session.session_id, "wait")
        await conn.cancel(session.session_id)  # before the agent's turn task ran
        assert (await turn).stop_reason == "cancelled"


async def test_a_second_prompt_for_a_running_session_is_refused():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        turn = conn.start_prompt(session.session_id, "hold")
        await agent.started.wait()
        with pytest.raises(acp.Error) as caught:
            await conn.prompt(session.session_id, "again")
        assert caught.value.code == acp.ErrorCode.INVALID_REQUEST
        agent.release.set()
        assert (await turn).stop_reason == "end_turn"


@pytest.mark.parametrize("how", ["session/cancel", "$/cancel_request"])
async def test_a_prompt_right_behind_a_cancel_starts_while_the_old_turn_unwinds(how: str):
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        turn = conn.start_prompt(session.session_id, "linger")
        await agent.started.wait()
        if how == "session/cancel":
            await conn.cancel(session.session_id)
        else:
            turn.cancel()
        try:
            # The cancelled turn is still unwinding (it waits for release).
            assert (await conn.prompt(session.session_id, "next")).stop_reason == "end_turn"
            assert agent.running == 1
        finally:
            agent.release.set()
        if how == "session/cancel":
            assert (await turn).stop_reason == "cancelled"
        else:
            with pytest.raises(acp.Error) as caught:
                await turn
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
        # The new turn's end did not unregister anything it should not have:
        # a third prompt runs, and a cancel still reaches a running turn.
        third = conn.start_prompt(session.session_id, "wait")
        await conn.cancel(session.session_id)
        assert (await third).stop_reason == "cancelled"


async def test_session_cancel_answers_pending_permission_requests_cancelled():
    agent, client = Agent(), Client(answer=None)
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        turn = conn.start_prompt(session.session_id, "ask")
        await client.asked.wait()
        await conn.cancel(session.session_id)
        assert (await turn).stop_reason == "cancelled"


async def test_a_cancel_request_on_a_prompt_answers_request_cancelled():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        session = await conn.new_session(cwd="/")
        turn = conn.start_prompt(session.session_id, "wait")
        turn.cancel()
        with pytest.raises(acp.Error) as caught:
            await turn
        assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED


async def test_methods_not_overridden_answer_method_not_found_never_null():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        with pytest.raises(acp.Error) as caught:
            await conn.load_session("s1", "/")
        assert caught.value.code == acp.ErrorCode.METHOD_NOT_FOUND
        assert caught.value.data == "session/load"


async def test_meta_never_overrides_parameters():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        request = v1.NewSessionRequest(cwd="/real", mcp_servers=[], meta={"cwd": "/from-meta"})
        await conn.send_request(request)
    assert agent.seen_cwd == ["/real"]


async def test_typed_send_request_returns_the_response_class():
    agent, client = Agent(), Client()
    async with pair(agent, client) as conn:
        response = await conn.send_request(v1.InitializeRequest(protocol_version=1))
        assert isinstance(response, v1.InitializeResponse)
        echoed = await conn.send_request(acp.UntypedMessage("_x/echo", {"a": 1}))
        assert echoed == {"method": "_x/echo", "params": {"a": 1}}


async def test_invalid_params_answer_with_bounded_data():
    builder = acp.agent_builder(Agent())
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": 5}})
        small = await log.next()
        assert small["error"]["code"] == -32602
        assert small["error"]["data"]["json"] == {"cwd": 5}
        huge = {"cwd": 5, "mcpServers": [], "pad": "x" * 100_000}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": huge})
        answer = await log.next()
        assert answer["error"]["code"] == -32602
        assert (
            "json" not in answer["error"]["data"] and answer["error"]["data"]["json_size"] > 100_000
        )
        assert len(str(answer)) < 2000


async def test_requests_beyond_the_limit_wait_in_a_queue():
    agent, client = Agent(), Client()
    agent.max_concurrent_requests = 1
    async with pair(agent, client) as conn:
        first = await conn.new_session(cwd="/")
        second = await conn.new_session(cwd="/")
        holding = conn.start_prompt(first.session_id, "hold")
        queued = conn.start_prompt(second.session_id, "hello")
        agent.release.set()
        assert (await holding).stop_reason == "end_turn"
        assert (await queued).stop_reason == "end_turn"
    assert agent.max_running == 1


def test_every_v1_method_has_a_python_name():
    from acp_fast._typed.methods import V1_AGENT_METHODS, V1_CLIENT_METHODS

    agent_side = {m for m, info in v1.METHODS.items() if info.side == "agent"}
    client_side = {m for m, info in v1.METHODS.items() if info.side == "client"}
    assert set(V1_AGENT_METHODS) == agent_side
    assert set(V1_CLIENT_METHODS) == client_side
    for table, base in ((V1_AGENT_METHODS, acp.BaseAgent), (V1_CLIENT_METHODS, acp.BaseClient)):
        for name in table.values():
            assert callable(getattr(base, name)), name
