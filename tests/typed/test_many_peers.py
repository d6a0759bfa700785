"""One class-based agent served to several peers at once (docs/transports.md):
each handler's ``self.client`` is its own connection's client, over real
sockets."""

from __future__ import annotations

import anyio
import pytest

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1, v2
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class SharedAgent(acp.BaseAgent):
    """Every client's session is "s1"; a prompt waits until both run."""

    def __init__(self) -> None:
        self.started = 0
        self.both_running = anyio.Event()

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id="s1")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        text = request.prompt[0].text  # type: ignore[union-attr]
        self.started += 1
        if self.started == 2:
            self.both_running.set()
        await self.both_running.wait()
        if text == "wait":
            await anyio.sleep_forever()
        await self.client.session_update(request.session_id, h.agent_text(f"for {text}"))
        return v1.PromptResponse(stop_reason="end_turn")


class Recorder(acp.BaseClient):
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, notification: v1.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            assert isinstance(update.content, v1.ContentBlockText)
            self.texts.append(update.content.text)


async def test_two_clients_of_one_agent_each_get_their_own_updates():
    agent = SharedAgent()
    one, two = Recorder(), Recorder()
    async with await acp.listen_tcp() as listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, acp.agent_builder(agent))
        with anyio.fail_after(TIMEOUT):
            async with (
                acp.connect_to_agent(one, acp.tcp("127.0.0.1", listener.port)) as first,
                acp.connect_to_agent(two, acp.tcp("127.0.0.1", listener.port)) as second,
            ):
                await first.new_session(cwd="/one")
                await second.new_session(cwd="/two")
                async with anyio.create_task_group() as prompts:
                    prompts.start_soon(first.prompt, "s1", "one")
                    prompts.start_soon(second.prompt, "s1", "two")
        group.cancel_scope.cancel()
    assert one.texts == ["for one"]
    assert two.texts == ["for two"]


async def test_session_cancel_of_one_client_leaves_the_others_same_session_running():
    agent = SharedAgent()
    async with await acp.listen_tcp() as listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, acp.agent_builder(agent))
        with anyio.fail_after(TIMEOUT):
            async with (
                acp.connect_to_agent(Recorder(), acp.tcp("127.0.0.1", listener.port)) as first,
                acp.connect_to_agent(Recorder(), acp.tcp("127.0.0.1", listener.port)) as second,
            ):
                await first.new_session(cwd="/one")
                await second.new_session(cwd="/two")
                waiting = first.start_prompt("s1", "wait")
                finishing = second.start_prompt("s1", "two")
                assert (await finishing).stop_reason == "end_turn"
                await first.cancel("s1")
                assert (await waiting).stop_reason == "cancelled"
        group.cancel_scope.cancel()


def test_client_outside_a_handler_with_several_live_connections_raises():
    agent = SharedAgent()

    class Live:
        _running = True

    class Handle:
        def __init__(self) -> None:
            self.cx = Live()

    with pytest.raises(AttributeError, match="not connected yet"):
        agent.client  # noqa: B018
    agent.client = Handle()  # type: ignore[assignment]
    only = agent.client
    assert isinstance(only, Handle)

    def bind_another() -> None:
        agent.client = Handle()  # type: ignore[assignment]

    import contextvars

    contextvars.copy_context().run(bind_another)  # a second connection's task
    assert agent.client is only  # this context's own connection
    with pytest.raises(RuntimeError, match="2 connections"):
        contextvars.copy_context().run(lambda: contextvars.Context().run(lambda: agent.client))


class SharedAgentV2(acp.BaseAgentV2):
    def __init__(self) -> None:
        self.both_running = anyio.Event()
        self.started = 0

    async def new_session(self, request: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="s1")

    async def prompt(self, request: v2.PromptRequest) -> str:
        text = request.prompt[0].text  # type: ignore[union-attr]
        self.started += 1
        if self.started == 2:
            self.both_running.set()
        await self.both_running.wait()
        chunk = v2.SessionUpdateAgentMessageChunk(
            message_id="m1", content=v2.ContentBlockText(text=f"for {text}")
        )
        await self.client.session_update(request.session_id, chunk)
        return "end_turn"


class RecorderV2(acp.BaseClientV2):
    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, notification: v2.UpdateSessionNotification) -> None:
        update = notification.update
        if isinstance(update, v2.SessionUpdateAgentMessageChunk):
            assert isinstance(update.content, v2.ContentBlockText)
            self.texts.append(update.content.text)


async def test_two_v2_clients_each_initialize_and_get_their_own_updates():
    """The v2 initialization guard and turns are per connection too."""
    from acp_fast._typed import v2 as typed_v2

    info = v2.Implementation(name="c", version="1")
    one, two = RecorderV2(), RecorderV2()
    async with await acp.listen_tcp() as listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, typed_v2.agent_builder_v2(SharedAgentV2()))
        with anyio.fail_after(TIMEOUT):
            async with (
                typed_v2.connect_to_agent_v2(one, acp.tcp("127.0.0.1", listener.port)) as first,
                typed_v2.connect_to_agent_v2(two, acp.tcp("127.0.0.1", listener.port)) as second,
            ):
                await first.initialize(info)
                await second.initialize(info)  # not "already initialized"
                await first.new_session(cwd="/one")
                await second.new_session(cwd="/two")
                async with anyio.create_task_group() as prompts:
                    prompts.start_soon(first.prompt, "s1", "one")
                    prompts.start_soon(second.prompt, "s1", "two")
        group.cancel_scope.cancel()
    assert one.texts == ["for one"]
    assert two.texts == ["for two"]
