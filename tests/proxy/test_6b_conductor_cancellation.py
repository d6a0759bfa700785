"""docs/semantics.md §6.B: cancellation through the conductor, scenarios #22–#28.

Each test is named ``test_s<N>_<scenario>``. They run client ⇄ conductor ⇄
[proxies] ⇄ agent, every component in this process (builders served over
in-memory links), ``initialize`` first unless noted. "Exactly one cancel" is
asserted after a barrier round trip through the whole chain: output is FIFO
and dispatch sequential at every hop, so a tunnelled raw ``$/cancel_request``
would have reached its endpoint before the barrier's answer.

#27 needs MCP-over-ACP, which acp_fast does not have: what applies of it (a
cancelled session/new leaves no session behind at the proxy, its start hook
never runs, the chain keeps working) is ported; see the test's docstring.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

import acp_fast as acp
from acp_fast.examples import proxy as example_proxy
from acp_fast.schema import v1
from tests.proxy.chain import (
    Parked,
    answer_initialize,
    expect_cancelled,
    initialize,
    park,
    running_chain,
)
from tests.support import SIMPLE, TIMEOUT, CancelLog, barrier, echo, simple

pytestmark = pytest.mark.anyio


def parking_agent(parked: Parked, cancels: CancelLog) -> acp.Builder[Any]:
    """Echoes ``simple_method``, parks ``"park"``, records its cancels."""

    async def handle(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        if message.params["message"] == "park":
            parked.add(responder.id)
            park(responder, cx)
            return
        await echo(message, responder, cx)

    builder = (
        acp.Agent.builder()
        .name("agent")
        .on_receive_request(answer_initialize, v1.InitializeRequest)
        .on_receive_request(handle, SIMPLE)
    )
    return cancels.install(builder)


@pytest.mark.parametrize("proxy_count", [1, 2])
async def test_s22_client_cancellation_propagates_hop_by_hop_to_agent(proxy_count: int):
    parked, agent_cancels = Parked(), CancelLog()
    proxies = [acp.Proxy.builder().name(f"proxy {i}") for i in range(proxy_count)]
    async with running_chain(parking_agent(parked, agent_cancels), proxies) as cx:
        await initialize(cx)
        sent = cx.send_request(simple("park"))
        sent.cancel()
        await expect_cancelled(sent)
        await barrier(cx)
    assert len(parked.ids) == 1
    assert parked.ids[0] != sent.id, "each hop re-issues the request under its own id"
    assert agent_cancels.ids == parked.ids


@pytest.mark.parametrize("proxy_count", [0, 2])
async def test_s23_agent_cancellation_propagates_hop_by_hop_to_client(proxy_count: int):
    # The reference runs this one without proxies; with two, the agent's
    # request and its cancel also cross proxies from their agent side.
    async def trigger(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        if message.params["message"] != "trigger reverse cancel":
            await echo(message, responder, cx)
            return

        async def reverse_cancel() -> None:
            upstream = cx.send_request(simple("park"))
            upstream.cancel()
            try:
                await upstream
            except acp.Error as error:
                responder.respond({"result": f"client request error: {error.code}"})
            else:
                responder.respond({"result": "client request was not cancelled"})

        cx.spawn(reverse_cancel)

    agent = (
        acp.Agent.builder()
        .name("agent")
        .on_receive_request(answer_initialize, v1.InitializeRequest)
        .on_receive_request(trigger, SIMPLE)
    )
    parked, client_cancels = Parked(), CancelLog()

    async def client_park(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        assert message.params["message"] == "park"
        parked.add(responder.id)
        park(responder, cx)

    client = client_cancels.install(acp.Client.builder().on_receive_request(client_park, SIMPLE))
    proxies = [acp.Proxy.builder() for _ in range(proxy_count)]
    async with running_chain(agent, proxies, client) as cx:
        await initialize(cx)
        with anyio.fail_after(TIMEOUT):
            reply = await cx.send_request(simple("trigger reverse cancel"))
        assert reply == {"result": "client request error: -32800"}
        await barrier(cx)
    assert len(parked.ids) == 1
    assert client_cancels.ids == parked.ids


def prompt_text(request: v1.PromptRequest) -> str:
    return "".join(b.text for b in request.prompt if isinstance(b, v1.ContentBlockText))


def text_prompt(session_id: str, text: str) -> v1.PromptRequest:
    return v1.PromptRequest(session_id=session_id, prompt=[v1.ContentBlockText(text=text)])


async def test_s24_prompt_cancellation_cascades_through_real_proxy_chain():
    prompt_ids, agent_cancels = Parked(), CancelLog()
    permission_ids, client_cancels = Parked(), CancelLog()
    updates: list[str] = []
    agent = acp.Agent.builder().name("agent")
    agent.on_receive_request(answer_initialize, v1.InitializeRequest)

    @agent.on_receive_request(v1.NewSessionRequest)
    async def new_session(request: v1.NewSessionRequest, responder: Any, cx: Any) -> None:
        assert request.mcp_servers == []
        responder.respond(v1.NewSessionResponse(session_id="test-session"))

    @agent.on_receive_request(v1.PromptRequest)
    async def prompt(request: v1.PromptRequest, responder: acp.Responder[Any], cx: Any) -> None:
        text = prompt_text(request)
        if text != "park":
            # Completes normally, with an update the proxy transforms.
            chunk = v1.SessionUpdateAgentMessageChunk(content=v1.ContentBlockText(text=text))
            cx.send_notification(
                v1.SessionNotification(session_id=request.session_id, update=chunk)
            )
            responder.respond(v1.PromptResponse(stop_reason="end_turn"))
            return
        prompt_ids.add(responder.id)
        cancellation = responder.cancellation()

        async def ask_then_withdraw() -> None:
            permission = cx.send_request(
                v1.RequestPermissionRequest(
                    session_id=request.session_id,
                    tool_call=v1.ToolCallUpdate(tool_call_id="tool-1"),
                    options=[
                        v1.PermissionOption(option_id="allow", name="Allow", kind="allow_once")
                    ],
                )
            )
            # The client cancels the prompt instead of answering; like a real
            # agent, withdraw the permission request, then report.
            await cancellation.cancelled()
            permission.cancel()
            try:
                await permission
            except acp.Error as error:
                if error.code == acp.ErrorCode.REQUEST_CANCELLED:
                    responder.respond_with_error(acp.Error.request_cancelled())
                    return
                raise
            responder.respond_with_error(acp.Error.internal_error("permission not cancelled"))

        cx.spawn(ask_then_withdraw)

    cancels_installed = agent_cancels.install(agent)
    client = acp.Client.builder()

    @client.on_receive_request(v1.RequestPermissionRequest)
    async def permission(request: Any, responder: acp.Responder[Any], cx: Any) -> None:
        permission_ids.add(responder.id)
        park(responder, cx)

    @client.on_receive_notification(v1.SessionNotification)
    async def update(notification: v1.SessionNotification, cx: Any) -> None:
        chunk = notification.update
        if isinstance(chunk, v1.SessionUpdateAgentMessageChunk) and isinstance(
            chunk.content, v1.ContentBlockText
        ):
            updates.append(chunk.content.text)

    arrow_proxy = example_proxy.build(log=lambda text: None)
    async with running_chain(
        cancels_installed, [arrow_proxy], client_cancels.install(client)
    ) as cx:
        await initialize(cx)
        with anyio.fail_after(TIMEOUT):
            session = await cx.send_request(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
        sent = cx.send_request(text_prompt(session.session_id, "park"))
        await permission_ids.wait()  # the agent's request reached the client
        sent.cancel()
        await expect_cancelled(sent)
        with anyio.fail_after(TIMEOUT):
            done = await cx.send_request(text_prompt(session.session_id, "barrier"))
        assert done.stop_reason == "end_turn"
    assert len(prompt_ids.ids) == 1 and prompt_ids.ids[0] != sent.id
    assert agent_cancels.ids == prompt_ids.ids
    assert len(permission_ids.ids) == 1
    assert client_cancels.ids == permission_ids.ids
    assert updates == [">barrier"]


def session_agent(parked: Parked, cancels: CancelLog) -> acp.Builder[Any]:
    """Parks session/new when cwd ends with park-session; else "normal-session"."""
    agent = acp.Agent.builder().name("agent")
    agent.on_receive_request(answer_initialize, v1.InitializeRequest)

    @agent.on_receive_request(v1.NewSessionRequest)
    async def new_session(request: v1.NewSessionRequest, responder: Any, cx: Any) -> None:
        if request.cwd.endswith("park-session"):
            parked.add(responder.id)
            park(responder, cx)
        else:
            responder.respond(v1.NewSessionResponse(session_id="normal-session"))

    agent.on_receive_request(echo, SIMPLE)
    return cancels.install(agent)


async def cancel_then_create_session(cx: Any) -> acp.SentRequest[Any]:
    await initialize(cx)
    first: acp.SentRequest[Any] = cx.send_request(
        v1.NewSessionRequest(cwd="/park-session", mcp_servers=[])
    )
    first.cancel()
    await expect_cancelled(first)
    with anyio.fail_after(TIMEOUT):
        second = await cx.send_request(v1.NewSessionRequest(cwd="/work", mcp_servers=[]))
    assert second.session_id == "normal-session"
    return first


async def test_s25_session_new_cancellation_propagates_through_proxy():
    parked, agent_cancels = Parked(), CancelLog()
    async with running_chain(session_agent(parked, agent_cancels), [acp.Proxy.builder()]) as cx:
        first = await cancel_then_create_session(cx)
        await barrier(cx)
    assert len(parked.ids) == 1 and parked.ids[0] != first.id
    assert agent_cancels.ids == parked.ids


def session_helper_proxy(started: list[Any], *, async_hook: bool = False) -> acp.Builder[Any]:
    """A proxy that handles session/new itself, through the session helper."""
    proxy = acp.Proxy.builder().name("session-proxy")

    @proxy.on_receive_request(v1.NewSessionRequest, peer=acp.Client)
    async def new_session(request: v1.NewSessionRequest, responder: Any, cx: Any) -> None:
        def on_session_start(response: v1.NewSessionResponse) -> None:
            started.append((response.session_id, cx))

        async def on_session_start_async(response: v1.NewSessionResponse) -> None:
            await anyio.lowlevel.checkpoint()
            on_session_start(response)

        hook = on_session_start_async if async_hook else on_session_start
        acp.Proxy.forward_new_session(cx, request, responder, hook)

    return proxy


async def test_s26_proxy_session_helper_cancellation_propagates_to_agent():
    parked, agent_cancels = Parked(), CancelLog()
    started: list[Any] = []
    async with running_chain(
        session_agent(parked, agent_cancels), [session_helper_proxy(started, async_hook=True)]
    ) as cx:
        first = await cancel_then_create_session(cx)
        await barrier(cx)
    assert len(parked.ids) == 1 and parked.ids[0] != first.id
    assert agent_cancels.ids == parked.ids
    assert [session_id for session_id, _ in started] == ["normal-session"]


async def test_s27_proxy_session_helper_leaves_nothing_behind_after_cancelled_session():
    """What applies of #27 without MCP-over-ACP.

    The reference attaches a tracking MCP server to each session the proxy
    starts, and checks that the parked session's server is gone: a later
    ``mcp/connect`` for its id reaches no connect hook. Here the per-session
    state a proxy keeps is its session routing and whatever its
    ``on_session_start`` hook sets up: after the cancelled session/new the
    hook has run only for the session that exists, only that session is
    routed, and an agent-to-client request of that session still crosses the
    proxy (the reference's ``session/request_permission`` barrier).
    """
    from acp_fast._async.roles import _SessionRoutes

    parked, agent_cancels = Parked(), CancelLog()
    started: list[Any] = []
    agent = session_agent(parked, agent_cancels)

    @agent.on_receive_request("test/ask_permission")
    async def ask(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        async def run() -> None:
            answer = await cx.send_request(
                v1.RequestPermissionRequest(
                    session_id="normal-session",
                    tool_call=v1.ToolCallUpdate(tool_call_id="tool-1"),
                    options=[
                        v1.PermissionOption(option_id="allow", name="Allow", kind="allow_once")
                    ],
                )
            )
            assert isinstance(answer.outcome, v1.RequestPermissionOutcomeSelected)
            responder.respond({"selected": answer.outcome.option_id})

        cx.spawn(run)

    client = acp.Client.builder()

    @client.on_receive_request(v1.RequestPermissionRequest)
    async def permission(request: Any, responder: acp.Responder[Any], cx: Any) -> None:
        assert request.session_id == "normal-session"
        responder.respond({"outcome": {"outcome": "selected", "optionId": "allow"}})

    async with running_chain(agent, [session_helper_proxy(started)], client) as cx:
        await cancel_then_create_session(cx)
        with anyio.fail_after(TIMEOUT):
            reply = await cx.send_request(acp.UntypedMessage("test/ask_permission", {}))
        assert reply == {"selected": "allow"}
        [(session_id, proxy_cx)] = started
        assert session_id == "normal-session"
        assert _SessionRoutes.of(proxy_cx).session_ids == {"normal-session"}
    assert agent_cancels.ids == parked.ids and len(parked.ids) == 1


async def test_s28_initialize_cancellation_propagates_through_proxy():
    parked, agent_cancels = Parked(), CancelLog()
    proxy_initializations: list[Any] = []
    agent = acp.Agent.builder().name("agent")

    @agent.on_receive_request(v1.InitializeRequest)
    async def initialize_once(
        request: v1.InitializeRequest, responder: acp.Responder[Any], cx: Any
    ) -> None:
        if not parked.ids:
            parked.add(responder.id)
            park(responder, cx)
        else:
            await answer_initialize(request, responder, cx)

    agent.on_receive_request(echo, SIMPLE)
    proxy = acp.Proxy.builder()

    @proxy.on_receive_request("_proxy/initialize", peer=acp.Client)
    async def observe(message: acp.UntypedMessage, responder: Any, cx: Any) -> Any:
        proxy_initializations.append(message.params["protocolVersion"])
        return acp.NOT_HANDLED  # the default forwarding goes on

    async with running_chain(agent_cancels.install(agent), [proxy]) as cx:
        first = cx.send_request(v1.InitializeRequest(protocol_version=1))
        first.cancel()
        await expect_cancelled(first)
        await initialize(cx)
        await barrier(cx)
    assert proxy_initializations == [1, 1], "the conductor sends the proxy _proxy/initialize"
    assert len(parked.ids) == 1 and parked.ids[0] != first.id
    assert agent_cancels.ids == parked.ids
