"""Every v1 method is reachable from both sides of the class API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1, v1_unstable
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class Agent(acp.BaseAgent):
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def logout(self, request: v1.LogoutRequest) -> v1.LogoutResponse:
        self.calls.append(("logout", None))
        return v1.LogoutResponse()

    async def list_sessions(self, request: v1.ListSessionsRequest) -> v1.ListSessionsResponse:
        self.calls.append(("list", (request.cursor, request.cwd)))
        return v1.ListSessionsResponse(
            sessions=[v1.SessionInfo(session_id="s1", cwd="/w")], next_cursor="c2"
        )

    async def delete_session(self, request: v1.DeleteSessionRequest) -> v1.DeleteSessionResponse:
        self.calls.append(("delete", request.session_id))
        return v1.DeleteSessionResponse()

    async def resume_session(self, request: v1.ResumeSessionRequest) -> v1.ResumeSessionResponse:
        self.calls.append(("resume", (request.session_id, request.cwd, request.mcp_servers)))
        return v1.ResumeSessionResponse()

    async def set_session_config_option(
        self, request: v1.SetSessionConfigOptionRequest
    ) -> v1.SetSessionConfigOptionResponse:
        self.calls.append(("config", (type(request).__name__, request.value)))
        return v1.SetSessionConfigOptionResponse(config_options=[])

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        answer = await self.client.create_elicitation(
            v1.CreateElicitationRequestForm(
                message="Name?",
                session_id=request.session_id,
                requested_schema=v1.ElicitationSchema(),
            )
        )
        self.calls.append(("elicited", answer))
        await self.client.complete_elicitation("e1")
        return v1.PromptResponse(stop_reason="end_turn")


class Client(acp.BaseClient):
    def __init__(self) -> None:
        self.completed: list[str] = []

    async def create_elicitation(
        self, request: v1.CreateElicitationRequest
    ) -> v1.CreateElicitationResponse:
        assert isinstance(request, v1.CreateElicitationRequestForm)
        return v1.CreateElicitationResponseAccept(content={"name": request.message})

    async def complete_elicitation(self, notification: v1.CompleteElicitationNotification) -> None:
        self.completed.append(notification.elicitation_id)


@asynccontextmanager
async def connected(agent: acp.BaseAgent, client: Client) -> AsyncIterator[acp.AgentConnection]:
    agent_end, client_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(acp.serve_agent, agent, agent_end)
        async with acp.connect_to_agent(client, client_end) as conn:
            yield conn
        tg.cancel_scope.cancel()


async def test_the_client_reaches_every_agent_method() -> None:
    agent, client = Agent(), Client()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            await conn.logout()
            page = await conn.list_sessions(cursor="c1", cwd="/w")
            assert page.next_cursor == "c2" and page.sessions[0].session_id == "s1"
            assert (await conn.list_sessions()).sessions
            await conn.delete_session("s1")
            await conn.resume_session("s1", "/w", mcp_servers=[])
            await conn.set_session_config_option("s1", "model", "fast")
            await conn.set_session_config_option("s1", "verbose", True)
            await conn.prompt("s1", "hi")
    assert agent.calls[:7] == [
        ("logout", None),
        ("list", ("c1", "/w")),
        ("list", (msgspec_unset(), msgspec_unset())),
        ("delete", "s1"),
        ("resume", ("s1", "/w", [])),
        ("config", ("SetSessionConfigOptionRequestValueId", "fast")),
        ("config", ("SetSessionConfigOptionRequestBoolean", True)),
    ]
    elicited = agent.calls[7]
    assert elicited == ("elicited", v1.CreateElicitationResponseAccept(content={"name": "Name?"}))
    assert client.completed == ["e1"]


async def test_fork_session_speaks_the_unstable_schema() -> None:
    agent, client = Agent(), Client()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            # A stable-only agent does not route session/fork: -32601.
            with pytest.raises(acp.Error) as raised:
                await conn.fork_session("s1", "/w")
    assert raised.value.code == -32601


def msgspec_unset() -> Any:
    import msgspec

    return msgspec.UNSET


class UnstableAgent(acp.BaseAgent):
    unstable = True

    def __init__(self) -> None:
        self.opened: list[str] = []

    async def fork_session(
        self, request: v1_unstable.ForkSessionRequest
    ) -> v1_unstable.ForkSessionResponse:
        return v1_unstable.ForkSessionResponse(session_id=f"{request.session_id}-fork")

    async def did_open_document(self, notification: Any) -> None:
        self.opened.append(notification.uri)


async def test_an_agent_that_opts_in_gets_the_draft_methods() -> None:
    agent = UnstableAgent()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, Client()) as conn:
            forked = await conn.fork_session("s1", "/w")
            conn.send_notification(
                v1_unstable.DidOpenDocumentNotification(
                    session_id="s1", uri="file:///a.py", language_id="python", version=1, text=""
                )
            )
            # A round trip behind the notification: it has been handled.
            await conn.fork_session("s2", "/w")
    assert forked.session_id == "s1-fork"
    assert agent.opened == ["file:///a.py"]
