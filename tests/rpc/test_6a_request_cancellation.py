"""docs/semantics.md §6.A: request cancellation scenarios #1–#21.

Each test is named ``test_s<N>_<scenario>`` after the checklist entry it
ports. "Exactly one cancel" is always checked after a barrier (a later round
trip): output is FIFO and dispatch is sequential, so a second cancel would have
arrived before the barrier's answer.
"""

from __future__ import annotations

import gc
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.support import (
    SIMPLE,
    TIMEOUT,
    CancelLog,
    barrier,
    connected,
    echo,
    echo_server,
    serving,
    simple,
)

pytestmark = pytest.mark.anyio


async def park_until_cancelled(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
    """Answer with run_until_cancelled(never-finishing work), in a task."""

    async def run() -> None:
        try:
            responder.respond(
                await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
            )
        except acp.Error as error:
            responder.respond_with_error(error)

    cx.spawn(run)


async def test_s1_unhandled_wrapped_protocol_level_notifications_are_ignored():
    async def decline(message: Any, cx: Any) -> Any:
        return acp.NOT_HANDLED

    server = (
        acp.Proxy.builder()
        .on_receive_notification(decline, "$/cancel_request", peer=acp.Agent)
        .on_receive_request(echo, SIMPLE)
    )
    async with serving(server) as peer:
        peer.send(
            {
                "jsonrpc": "2.0",
                "method": "_proxy/successor",
                "params": {"method": "$/cancel_request", "params": {"requestId": "req-1"}},
            }
        )
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": SIMPLE,
                "params": {"message": "after wrapped cancel"},
            }
        )
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":2,"result":{"result":"echo: after wrapped cancel"}}'
        )


async def test_s2_wrapped_cancel_request_cancels_wrapped_request():
    server = acp.Proxy.builder().on_receive_request(park_until_cancelled, SIMPLE, peer=acp.Agent)
    async with serving(server) as peer:
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "_proxy/successor",
                "params": {"method": SIMPLE, "params": {"message": "wrapped"}},
            }
        )
        peer.send(
            {
                "jsonrpc": "2.0",
                "method": "_proxy/successor",
                "params": {"method": "$/cancel_request", "params": {"requestId": 7}},
            }
        )
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}'
        )


async def test_s3_cancelling_request_sent_to_successor_peer_sends_wrapped_cancel():
    wrapped, plain = CancelLog(), CancelLog()

    async def plain_observer(message: Any, cx: Any) -> Any:
        plain.ids.append(message.params["requestId"])
        return acp.NOT_HANDLED

    server = acp.Proxy.builder().on_receive_notification(plain_observer, "$/cancel_request")
    wrapped.install(server, peer=acp.Agent)
    server.on_receive_request(park_until_cancelled, SIMPLE, peer=acp.Agent)
    server.on_receive_request(echo, SIMPLE)
    async with connected(server, acp.Proxy.builder()) as cx:
        sent = cx.send_request_to(acp.Agent, simple("park"))
        sent.cancel()
        with pytest.raises(acp.Error) as caught:
            with anyio.fail_after(TIMEOUT):
                await sent
        assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
        with anyio.fail_after(TIMEOUT):
            assert await cx.send_request_to(acp.Client, simple("b")) == {"result": "echo: b"}
        assert wrapped.ids == [sent.id]
        assert plain.ids == []


async def test_s4_cancel_request_notification_can_be_sent_and_handled():
    log = CancelLog()
    async with connected(log.install(echo_server())) as cx:
        cx.send_cancel_request("request-42")
        await log.wait()
        assert log.ids == ["request-42"]


def parking_server(log: CancelLog) -> tuple[acp.Builder[Any], list[acp.Responder[Any]]]:
    """An echo server that keeps ``park``-like requests unanswered."""
    parked: list[acp.Responder[Any]] = []

    async def handle(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        if message.params["message"] in ("slow", "abandoned", "park"):
            parked.append(responder)
            return None
        return await echo(message, responder, cx)

    builder = acp.UntypedRole.builder().on_receive_request(handle, SIMPLE)
    return log.install(builder), parked


async def test_s5_sent_request_can_send_cancellation_for_its_id():
    log = CancelLog()
    server, _ = parking_server(log)
    async with connected(server) as cx:
        sent = cx.send_request(simple("slow"))
        request_id = sent.id
        sent.cancel()
        await log.wait()
        sent.detach()  # drop the handle (already cancelled: nothing more)
        del sent
        await barrier(cx)
        assert log.ids == [request_id]


async def test_s6_dropped_sent_request_sends_cancellation_for_its_id():
    log = CancelLog()
    server, _ = parking_server(log)
    async with connected(server) as cx:
        sent = cx.send_request(simple("abandoned"))
        request_id = sent.id
        with pytest.warns(acp.AbandonedRequestWarning):
            del sent
            gc.collect()
        await barrier(cx)
        assert log.ids == [request_id]


async def test_s7_detached_sent_request_does_not_send_cancellation():
    log = CancelLog()
    server, _ = parking_server(log)
    async with connected(server) as cx:
        cx.send_request(simple("park")).detach()
        gc.collect()
        await barrier(cx)
        assert log.ids == []


async def test_s8_late_response_after_dropped_sent_request_does_not_close_connection():
    parked: list[acp.Responder[Any]] = []
    cancelled: list[Any] = []

    async def handle(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        if message.params["message"] == "late":
            parked.append(responder)
            return None
        return await echo(message, responder, cx)

    async def on_cancel(message: acp.UntypedMessage, cx: Any) -> None:
        cancelled.append(message.params["requestId"])
        parked.pop().respond({"result": "late response"})

    server = (
        acp.UntypedRole.builder()
        .on_receive_request(handle, SIMPLE)
        .on_receive_notification(on_cancel, "$/cancel_request")
    )
    async with connected(server) as cx:
        sent = cx.send_request(simple("late"))
        request_id = sent.id
        with pytest.warns(acp.AbandonedRequestWarning):
            del sent
            gc.collect()
        with anyio.fail_after(TIMEOUT):
            assert await cx.send_request(simple("after late")) == {"result": "echo: after late"}
        assert cancelled == [request_id]
        assert parked == []


async def test_s9_response_buffered_before_drop_disarms_auto_cancellation():
    log = CancelLog()
    async with connected(log.install(echo_server())) as cx:
        sent = cx.send_request(simple("buffered"))
        await barrier(cx)  # the response to "buffered" has been routed
        del sent
        gc.collect()
        await barrier(cx, "after buffered")
        assert log.ids == []


@pytest.mark.parametrize("retain", [False, True], ids=["dropped", "retained"])
async def test_s10_s11_response_claimed_by_dispatch_handler_disarms_auto_cancellation(retain):
    log = CancelLog()
    claimed_id: list[int] = []
    retained: list[acp.ResponseDispatch] = []

    async def claim(dispatch: Any, cx: Any) -> Any:
        if (
            isinstance(dispatch, acp.ResponseDispatch)
            and claimed_id
            and dispatch.id == claimed_id[0]
        ):
            if retain:
                retained.append(dispatch)
            return None  # claimed: the router is dropped (or kept)
        return acp.NOT_HANDLED

    client = acp.UntypedRole.builder().on_receive_dispatch(claim)
    async with connected(log.install(echo_server()), client) as cx:
        sent = cx.send_request(simple("claimed"))
        claimed_id.append(sent.id)
        await barrier(cx)
        del sent
        gc.collect()
        await barrier(cx, "after claimed")
        assert log.ids == []
        assert len(retained) == (1 if retain else 0)


async def test_s12_completed_sent_request_does_not_send_cancellation_on_drop():
    log = CancelLog()
    async with connected(log.install(echo_server())) as cx:
        with anyio.fail_after(TIMEOUT):
            assert await cx.send_request(simple("complete")) == {"result": "echo: complete"}
        gc.collect()
        await barrier(cx)
        assert log.ids == []


# --- forwarding through a middle hop (#13–#17) --------------------------------


class Backend:
    """The far hop: parks ``park``-like requests, records cancels and ids."""

    def __init__(self, *, honours_cancel: bool) -> None:
        self.cancels: list[Any] = []
        self.parked_ids: list[Any] = []
        self.notifications: list[str] = []
        self.parked: list[acp.Responder[Any]] = []
        self.honours_cancel = honours_cancel

    def builder(self) -> acp.Builder[Any]:
        async def handle(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
            text = message.params["message"]
            if text in ("park", "cancel downstream"):
                self.parked_ids.append(responder.id)
                self.parked.append(responder)
                return None
            if text == "release":
                self.parked.pop().respond("released")
            return await echo(message, responder, cx)

        async def on_notification(message: acp.UntypedMessage, cx: Any) -> None:
            self.notifications.append(message.method)
            if message.method == "$/cancel_request":
                self.cancels.append(message.params["requestId"])
                if self.honours_cancel:
                    for responder in list(self.parked):
                        if responder.id == message.params["requestId"]:
                            self.parked.remove(responder)
                            responder.respond_with_error(acp.Error.request_cancelled())

        return (
            acp.UntypedRole.builder()
            .name("backend")
            .on_receive_request(handle, SIMPLE)
            .on_receive_notification(on_notification)
        )


async def run_chain(backend: Backend, middle_for: Any, client: acp.Builder[Any] | None = None):
    """client → middle → backend; yields (client cx, middle's cx to backend)."""
    ours, theirs = memory_pair()
    group = anyio.create_task_group()
    await group.__aenter__()
    group.start_soon(backend.builder().connect_to, ours)
    to_backend_context = acp.UntypedRole.builder().name("middle→backend").connect(theirs)
    to_backend = await to_backend_context.__aenter__()
    client_context = connected(middle_for(to_backend), client)
    cx = await client_context.__aenter__()

    async def close() -> None:
        await client_context.__aexit__(None, None, None)
        await to_backend_context.__aexit__(None, None, None)
        await group.__aexit__(None, None, None)

    return cx, close


async def expect_cancelled(sent: acp.SentRequest[Any]) -> None:
    with pytest.raises(acp.Error) as caught:
        with anyio.fail_after(TIMEOUT):
            await sent
    assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
    assert caught.value.message == "Request cancelled"


async def test_s13_forward_response_to_propagates_cancellation_to_downstream_request():
    backend = Backend(honours_cancel=True)

    def middle(to_backend: Any) -> acp.Builder[Any]:
        async def forward(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
            to_backend.send_request(message).forward_response_to(responder)

        return acp.UntypedRole.builder().name("middle").on_receive_request(forward, SIMPLE)

    cx, close = await run_chain(backend, middle)
    try:
        sent = cx.send_request(simple("cancel downstream"))
        sent.cancel()
        await expect_cancelled(sent)
        await barrier(cx)
        assert backend.cancels == backend.parked_ids
        assert len(backend.cancels) == 1
    finally:
        await close()


async def test_s14_send_proxied_message_does_not_tunnel_cancel_notifications():
    backend = Backend(honours_cancel=True)

    def middle(to_backend: Any) -> acp.Builder[Any]:
        async def forward(dispatch: Any, cx: Any) -> None:
            to_backend.send_proxied_message_to(None, dispatch)

        return acp.UntypedRole.builder().name("middle").on_receive_dispatch(forward)

    cx, close = await run_chain(backend, middle)
    try:
        sent = cx.send_request(simple("park"))
        sent.cancel()
        await expect_cancelled(sent)
        await barrier(cx)
        assert len(backend.parked_ids) == 1
        assert backend.parked_ids[0] != sent.id
        assert backend.cancels == backend.parked_ids
    finally:
        await close()


async def test_s15_send_proxied_message_does_not_tunnel_wrapped_cancel_notifications():
    backend = Backend(honours_cancel=True)

    def middle(to_backend: Any) -> acp.Builder[Any]:
        async def forward(dispatch: Any, cx: Any) -> None:
            to_backend.send_proxied_message_to(None, dispatch)

        return acp.Proxy.builder().name("middle").on_receive_dispatch(forward)

    cx, close = await run_chain(backend, middle, acp.Proxy.builder())
    try:
        cx.send_cancel_request_to(acp.Agent, "req-1")
        with anyio.fail_after(TIMEOUT):
            reply = await cx.send_request_to(acp.Client, simple("barrier"))
        assert reply == {"result": "echo: barrier"}
        assert backend.notifications == []
    finally:
        await close()


async def test_s16_custom_forwarding_propagates_cancellation_when_opted_in():
    backend = Backend(honours_cancel=True)

    def middle(to_backend: Any) -> acp.Builder[Any]:
        async def forward(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
            (
                to_backend.send_request(message)
                .forward_cancellation_from(responder.cancellation())
                .on_receiving_result(responder.respond_with_result)
            )

        return acp.UntypedRole.builder().on_receive_request(forward, SIMPLE)

    cx, close = await run_chain(backend, middle)
    try:
        sent = cx.send_request(simple("park"))
        sent.cancel()
        await expect_cancelled(sent)
        await barrier(cx)
        assert len(backend.parked_ids) == 1 and backend.parked_ids[0] != sent.id
        assert backend.cancels == backend.parked_ids
    finally:
        await close()


async def test_s17_custom_forwarding_absorbs_cancellation_by_default():
    backend = Backend(honours_cancel=False)

    def middle(to_backend: Any) -> acp.Builder[Any]:
        async def forward(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
            to_backend.send_request(message).on_receiving_result(responder.respond_with_result)

        return acp.UntypedRole.builder().on_receive_request(forward, SIMPLE)

    cx, close = await run_chain(backend, middle)
    try:
        sent = cx.send_request(simple("park"))
        sent.cancel()
        await barrier(cx)
        assert backend.cancels == []
        with anyio.fail_after(TIMEOUT):
            assert await cx.send_request(simple("release")) == {"result": "echo: release"}
            assert await sent == "released"
        assert backend.cancels == []
    finally:
        await close()


async def test_s18_cancellation_marker_requested_after_cancel_is_already_cancelled():
    parked: list[acp.Responder[Any]] = []

    async def park(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        parked.append(responder)  # no cancellation() call yet

    async def on_cancel(message: Any, cx: Any) -> None:
        responder = parked.pop()
        first, second = responder.cancellation(), responder.cancellation()
        if first.is_cancelled() and second.is_cancelled():
            responder.respond_with_error(acp.Error.request_cancelled())
        else:
            responder.respond("not cancelled")

    server = (
        acp.UntypedRole.builder()
        .on_receive_request(park, SIMPLE)
        .on_receive_notification(on_cancel, "$/cancel_request")
    )
    async with connected(server) as cx:
        sent = cx.send_request(simple("park"))
        sent.cancel()
        await expect_cancelled(sent)


async def test_s19_retried_protocol_level_notification_reaches_later_dynamic_handler():
    collected: list[Any] = []

    async def decline_for_later(message: Any, cx: Any) -> Any:
        return acp.NotHandled(retry=True)

    async def collect(message: acp.UntypedMessage, cx: Any) -> None:
        collected.append(message.params["requestId"])

    async def register(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        if message.params["message"] != "register":
            return await echo(message, responder, cx)
        cx.add_dynamic_handler(acp.HandlerEntry.notification(collect, "$/cancel_request")).detach()
        responder.respond({"result": "registered"})
        return None

    server = (
        acp.UntypedRole.builder()
        .on_receive_notification(decline_for_later, "$/cancel_request")
        .on_receive_request(register, SIMPLE)
    )
    async with connected(server) as cx:
        cx.send_cancel_request("req-1")
        await barrier(cx)
        assert collected == []
        with anyio.fail_after(TIMEOUT):
            await cx.send_request(simple("register"))
        await barrier(cx)
        assert collected == ["req-1"]


async def test_s20_request_handler_can_observe_cancellation_from_responder():
    states: list[bool] = []

    async def handle(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        marker = responder.cancellation()
        states.append(marker.is_cancelled())

        async def run() -> None:
            try:
                responder.respond(await marker.run_until_cancelled(anyio.sleep_forever))
            except acp.Error as error:
                states.append(marker.is_cancelled())
                responder.respond_with_error(error)

        cx.spawn(run)

    async with connected(acp.UntypedRole.builder().on_receive_request(handle, SIMPLE)) as cx:
        sent = cx.send_request(simple("observe"))
        sent.cancel()
        await expect_cancelled(sent)
    assert states == [False, True]


def test_s21_protocol_level_notification_and_cancelled_error_code_are_typed():
    import msgspec

    from acp_fast.schema import v1

    notification = msgspec.json.decode(b'{"requestId":"req-1"}', type=v1.CancelRequestNotification)
    assert notification.request_id == "req-1"
    assert v1.CancelRequestNotification.METHOD == "$/cancel_request"
    error = acp.Error.request_cancelled()
    assert (error.code, error.message) == (-32800, "Request cancelled")
    assert acp.ErrorCode.REQUEST_CANCELLED == -32800
