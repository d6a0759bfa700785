"""The v2 draft: initialization guard, prompt acceptance lifecycle, version choice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast._typed import v2 as typed_v2
from acp_fast.schema import v2
from acp_fast.testing import memory_pair
from tests.rpc.wire import facing_raw_peer
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio

INFO = v2.Implementation(name="test-client", version="1")


class AgentV2(typed_v2.BaseAgentV2):
    def __init__(self) -> None:
        self.initialized = 0

    async def initialize(self, request: v2.InitializeRequest) -> v2.InitializeResponse:
        self.initialized += 1
        return await super().initialize(request)

    async def new_session(self, request: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="v2-session")

    async def prompt(self, request: v2.PromptRequest) -> str:
        text = request.prompt[0].text  # type: ignore[union-attr]
        chunk = v2.SessionUpdateAgentMessageChunk(
            message_id="m1", content=v2.ContentBlockText(text=f"re: {text}")
        )
        await self.client.session_update(request.session_id, chunk)
        if text == "wait":
            await anyio.sleep_forever()
        return "end_turn"


class ClientV2(typed_v2.BaseClientV2):
    def __init__(self) -> None:
        self.updates: list[str] = []

    async def session_update(self, notification: v2.UpdateSessionNotification) -> None:
        update = notification.update
        if isinstance(update, v2.SessionUpdateStateUpdate):
            self.updates.append(f"state:{update.state}")
        elif isinstance(update, v2.SessionUpdateAgentMessageChunk):
            self.updates.append(f"chunk:{update.content.text}")  # type: ignore[union-attr]


@asynccontextmanager
async def pair(
    agent: typed_v2.BaseAgentV2, client: typed_v2.BaseClientV2
) -> AsyncIterator[typed_v2.AgentConnectionV2]:
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(typed_v2.serve_agent_v2, agent, ours)
        async with typed_v2.connect_to_agent_v2(client, theirs) as connection:
            with anyio.fail_after(TIMEOUT):
                yield connection


async def test_prompt_is_accepted_then_runs_to_idle():
    client = ClientV2()
    async with pair(AgentV2(), client) as conn:
        await conn.initialize(INFO)
        session = await conn.new_session(cwd="/project")
        assert await conn.prompt(session.session_id, "hello") == "end_turn"
    assert client.updates == ["state:running", "chunk:re: hello", "state:idle"]


async def test_session_cancel_ends_the_turn_idle_cancelled():
    client = ClientV2()
    async with pair(AgentV2(), client) as conn:
        await conn.initialize(INFO)
        session = await conn.new_session(cwd="/project")
        async with anyio.create_task_group() as group:
            outcome: list[str] = []

            async def run() -> None:
                outcome.append(await conn.prompt(session.session_id, "wait"))

            group.start_soon(run)
            while "chunk:re: wait" not in client.updates:
                await anyio.lowlevel.checkpoint()
            await conn.cancel(session.session_id)
        assert outcome == ["cancelled"]


async def test_the_client_refuses_session_requests_before_initialize():
    async with pair(AgentV2(), ClientV2()) as conn:
        with pytest.raises(acp.Error) as caught:
            await conn.new_session(cwd="/")
        assert caught.value.code == -32600 and "initialization must complete" in caught.value.data


async def test_the_agent_guards_initialization():
    agent = AgentV2()
    async with facing_raw_peer(typed_v2.agent_builder_v2(agent)) as (cx, peer, log):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}})
        refused = await log.next()
        assert (
            refused["error"]["code"] == -32600
            and "initialization must complete" in refused["error"]["data"]
        )
        init = {"protocolVersion": 2, "info": {"name": "raw", "version": "1"}}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init})
        assert (await log.next())["result"]["protocolVersion"] == 2
        peer.send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": init})
        again = await log.next()
        assert (
            again["error"]["code"] == -32600
            and "only be initialized once" in again["error"]["data"]
        )
        peer.send({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": "/"}})
        assert (await log.next())["result"] == {"sessionId": "v2-session"}
    assert agent.initialized == 1


@pytest.mark.parametrize("asked", [1, 2, 3])
async def test_a_versioned_agent_speaks_what_initialize_asks(asked):
    from tests.typed.test_class_api import Agent as AgentV1

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(
            lambda: acp.serve_versioned_agent(v1=AgentV1(), v2=AgentV2(), transport=ours)
        )
        from tests.support import RawPeer

        async with RawPeer(theirs) as peer:
            params: dict[str, Any] = {"protocolVersion": asked}
            if asked >= 2:
                params["info"] = {"name": "raw", "version": "1"}
            peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            answer = await peer.receive()
            assert answer["result"]["protocolVersion"] == min(asked, 2)
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/new",
                    "params": {"cwd": "/", "mcpServers": []},
                }
            )
            session = await peer.receive()
            assert session["result"]["sessionId"] == ("v2-session" if asked >= 2 else "s1")
            await peer.close_output()
