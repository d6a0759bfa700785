"""docs/semantics.md §6.C: unhandled messages, scenarios #29–#33.

Each test is named ``test_s<N>_<scenario>`` after the checklist entry it
ports. "Nothing precedes it" checks rely on FIFO output and sequential
dispatch: an answer to an earlier message would be read before the answer to
the later request.
"""

from __future__ import annotations

import gc
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.support import SIMPLE, TIMEOUT, echo, echo_server, serving, simple

pytestmark = pytest.mark.anyio


def request(request_id: Any, message: str, method: str = SIMPLE) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}


async def test_s29_unhandled_notifications_are_ignored():
    async with serving(echo_server()) as peer:
        for method, params in (
            ("$/cancel_request", {"requestId": "req-1"}),
            ("$/cancel_request", {"requestId": True}),  # malformed: dropped, no reply
            ("_x.ai/settings/update", {"theme": "dark"}),
            ("unknown/notification", {}),
        ):
            peer.send({"jsonrpc": "2.0", "method": method, "params": params})
        peer.send(request(2, "after notifications"))
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":2,"result":{"result":"echo: after notifications"}}'
        )


@pytest.mark.parametrize("role", [acp.UntypedRole, acp.Client, acp.Agent])
async def test_s30_unhandled_requests_are_rejected_with_method_not_found(role):
    async with serving(role.builder()) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "unknown/request", "params": {}})
        assert await peer.receive_line() == (
            b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,'
            b'"message":"Method not found","data":"unknown/request"}}'
        )


@pytest.mark.parametrize("role", [acp.UntypedRole, acp.Proxy])
async def test_s31_malformed_successor_envelope_still_reaches_handlers(role):
    seen: list[tuple[str, Any]] = []

    async def catch_all(message: acp.UntypedMessage, cx: Any) -> None:
        seen.append((message.method, message.params))

    server = role.builder().on_receive_notification(catch_all).on_receive_request(echo, SIMPLE)
    async with serving(server) as peer:
        peer.send({"jsonrpc": "2.0", "method": "_proxy/successor", "params": {"bogus": True}})
        peer.send(request(1, "barrier"))
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"result": "echo: barrier"},
        }
        assert seen == [("_proxy/successor", {"bogus": True})]


async def test_s32_late_response_to_dropped_request_is_discarded_without_closing_connection():
    parked: list[acp.Responder[Any]] = []
    cancels: list[Any] = []

    async def handle(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        text = message.params["message"]
        if text == "late":
            parked.append(responder)
            return None
        if text == "release":
            parked.pop().respond({"result": "late response"})  # answers the dropped one first
        return await echo(message, responder, cx)

    async def ignore_cancel(message: acp.UntypedMessage, cx: Any) -> None:
        cancels.append(message.params["requestId"])  # noted, not honoured

    server = (
        acp.UntypedRole.builder()
        .on_receive_request(handle, SIMPLE)
        .on_receive_notification(ignore_cancel, "$/cancel_request")
    )

    async def main(cx: acp.ConnectionTo[Any]) -> list[Any]:
        sent = cx.send_request(simple("late"))
        late_id = sent.id
        with pytest.warns(acp.AbandonedRequestWarning):
            del sent
            gc.collect()
        with anyio.fail_after(TIMEOUT):
            released = await cx.send_request(simple("release"))
            after = await cx.send_request(simple("after"))
        assert cancels == [late_id]
        return [released, after]

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(server.connect_to, ours)
        with anyio.fail_after(TIMEOUT):
            result = await acp.UntypedRole.builder().connect_with(theirs, main)
    assert result == [{"result": "echo: release"}, {"result": "echo: after"}]
    assert parked == []


async def test_s33_forward_response_to_answers_upstream_when_response_is_never_delivered():
    async def swallow(dispatch: Any, cx: Any) -> Any:
        if isinstance(dispatch, acp.ResponseDispatch):
            return None  # claimed; the router is dropped unrouted
        return acp.NOT_HANDLED

    backend_transport, middle_transport = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(echo_server().connect_to, backend_transport)
        swallowing = acp.UntypedRole.builder().name("middle→backend").on_receive_dispatch(swallow)
        async with swallowing.connect(middle_transport) as to_backend:

            async def middle(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
                if message.params["message"] == "ping":
                    responder.respond({"result": "local: ping"})
                else:
                    to_backend.send_request(message).forward_response_to(responder)

            server = acp.UntypedRole.builder().name("middle").on_receive_request(middle, SIMPLE)
            client_transport, server_transport = memory_pair()
            group.start_soon(server.connect_to, server_transport)
            async with acp.UntypedRole.builder().connect(client_transport) as cx:
                with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
                    await cx.send_request(simple("forward"))
                assert caught.value.code == acp.ErrorCode.INTERNAL_ERROR
                assert isinstance(caught.value.data, str)
                assert "never received" in caught.value.data
                assert not acp.is_incoming_transport_closed(caught.value)
                with anyio.fail_after(TIMEOUT):
                    assert await cx.send_request(simple("ping")) == {"result": "local: ping"}
