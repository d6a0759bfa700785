"""docs/semantics.md §6.K: prepared requests, publication, cancellation handles.

#115–#119 are the integration scenarios; the ``test_unit_*`` tests port the
one-line unit checks listed after them. The test plays the peer on the raw
wire, so every assertion is about what actually went out, in what order.
"""

from __future__ import annotations

import copy
import gc
import weakref
from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.rpc.wire import MARK, barrier_from_peer, facing_raw_peer, is_cancel, respond
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio

OK = {"value": 42}
INVALID = acp.Error.invalid_params().to_dict()


def prepared_message() -> acp.UntypedMessage:
    return acp.UntypedMessage("prepared", {})


def collecting_builder(notifications: list[str]) -> acp.Builder[Any]:
    async def collect(message: acp.UntypedMessage, cx: Any) -> None:
        notifications.append(message.method)

    from tests.support import SIMPLE, echo

    return (
        acp.UntypedRole.builder().on_receive_notification(collect).on_receive_request(echo, SIMPLE)
    )


@pytest.mark.parametrize("outcome", ["ok", "error"])
async def test_s115_external_prepared_callback_holds_following_batch_entry_and_eof(outcome):
    notifications: list[str] = []
    started: list[Any] = []
    started_event, release = anyio.Event(), anyio.Event()

    async def callback(result: Any) -> None:
        started.append(result)
        started_event.set()
        await release.wait()

    async with facing_raw_peer(collecting_builder(notifications)) as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        handle = prepared.cancellation_handle()
        cx.send_notification(acp.UntypedMessage("before-publication", {}))
        assert (await log.next())["method"] == "before-publication"  # nothing was sent before

        prepared.on_receiving_result(callback)
        request = await log.next()
        assert request["method"] == "prepared" and request["id"] == prepared.id
        result = {"jsonrpc": "2.0", "id": request["id"]}
        result.update({"result": OK} if outcome == "ok" else {"error": INVALID})
        peer.send([result, {"jsonrpc": "2.0", "method": "following", "params": {}}])
        await peer.close_output()

        with anyio.fail_after(TIMEOUT):
            await started_event.wait()
        if outcome == "ok":
            assert started == [OK]
        else:
            assert isinstance(started[0], acp.Error) and started[0].code == -32602
        # While the callback holds the barrier, neither the batch's next entry
        # nor EOF has been processed.
        assert notifications == []
        assert not cx.is_incoming_closed()
        handle.cancel()  # after routing: silent
        release.set()
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        assert notifications == ["following"]
        assert await log.until_mark(cx) == []


@pytest.mark.parametrize("outcome", ["ok", "error"])
async def test_s116_prepared_cancellation_handle_survives_publication_and_preserves_callback_result(
    outcome,
):
    results: list[Any] = []
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        handle = prepared.cancellation_handle()
        handle.cancel()
        handle.clone().cancel()
        assert await log.until_mark(cx, "before") == []  # nothing, and not remembered
        prepared.on_receiving_result(results.append)
        request = await log.next()
        assert request["id"] == prepared.id
        handle.cancel()
        handle.cancel()
        assert is_cancel(await log.next(), prepared.id)
        respond(
            peer, prepared.id, OK if outcome == "ok" else None, None if outcome == "ok" else INVALID
        )
        assert await barrier_from_peer(log) == []
        assert await log.until_mark(cx, "after") == []
    if outcome == "ok":
        assert results == [OK]
    else:
        assert len(results) == 1 and results[0].code == -32602


async def test_s117_cancellation_handles_share_once_only_state_with_sent_request_and_drop():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(prepared_message())
        request_id = sent.id
        handle = sent.cancellation_handle()
        handle.cancel()
        sent.cancel()
        handle.clone().cancel()
        del sent
        gc.collect()  # already cancelled: no second cancel, no warning
        handle.cancel()
        seen = await log.until_mark(cx)
        assert [m.get("method") for m in seen] == ["prepared", "$/cancel_request"]
        assert is_cancel(seen[1], request_id)


async def test_s118_dropping_cancellation_handles_leaves_request_drop_armed():
    class State:
        pass

    async with facing_raw_peer() as (cx, peer, log):
        # Handles dropped: nothing; the request dropped: one cancel.
        sent = cx.send_request(prepared_message())
        request_id = sent.id
        first, second = sent.cancellation_handle(), sent.cancellation_handle()
        kept = first.clone()
        del first, second
        gc.collect()
        assert [m.get("method") for m in await log.until_mark(cx, "1")] == ["prepared"]
        with pytest.warns(acp.AbandonedRequestWarning):
            del sent
            gc.collect()
        kept.cancel()  # a retained handle sends nothing more
        assert [is_cancel(m, request_id) for m in await log.until_mark(cx, "2")] == [True]

        # A handle does not keep the consumer's captured state alive.
        state = State()
        state_ref = weakref.ref(state)
        sent = cx.send_request(prepared_message())
        handle = sent.cancellation_handle()
        sent.on_receiving_result(lambda result, state=state: None)
        del sent, state
        request = (await log.until_mark(cx, "3"))[0]
        respond(peer, request["id"], OK)
        await barrier_from_peer(log)
        gc.collect()
        assert state_ref() is None
        handle.cancel()
        assert await log.until_mark(cx, "4") == []


async def test_s119_external_blocking_request_publishes_before_polling_without_holding_dispatch():
    notifications: list[str] = []
    async with facing_raw_peer(collecting_builder(notifications)) as (cx, peer, log):
        response = cx.prepare_request(prepared_message()).block_task()
        cx.send_notification(acp.UntypedMessage("after-request", {}))
        request = await log.next()
        assert request["method"] == "prepared"
        assert (await log.next())["method"] == "after-request"
        peer.send(
            [
                {"jsonrpc": "2.0", "id": request["id"], "result": OK},
                {"jsonrpc": "2.0", "method": "following", "params": {}},
            ]
        )
        # Later traffic is dispatched while the response is still unawaited.
        await barrier_from_peer(log)
        assert notifications == ["following"]
        with anyio.fail_after(TIMEOUT):
            assert await response == OK
        assert await log.until_mark(cx) == []


# --- the unit checks of §6.K ------------------------------------------------


async def test_unit_preparation_and_drop_send_nothing():
    async with facing_raw_peer() as (cx, peer, log):
        marker = acp.RequestCancellation()
        marker._state.fire()  # an already-cancelled source
        prepared = cx.prepare_request(prepared_message()).forward_cancellation_from(marker)
        prepared = prepared.map(str)
        assert prepared.method == "prepared"
        handle = prepared.cancellation_handle()
        handle.cancel()
        copy.copy(handle)
        del prepared
        gc.collect()
        handle.cancel()
        assert await log.until_mark(cx) == []
        assert cx._table.outgoing_count == 0


async def test_unit_block_task_publishes_immediately_and_dropping_it_unpolled_cancels():
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        request_id = prepared.id
        response = prepared.block_task()
        cx.send_notification(acp.UntypedMessage("following", {}))
        assert cx._table.pending(request_id).ordered is False
        with pytest.warns(acp.AbandonedRequestWarning):
            del response
            gc.collect()
        seen = await log.until_mark(cx)
        assert [m.get("method") for m in seen] == ["prepared", "following", "$/cancel_request"]
        assert is_cancel(seen[2], request_id)


async def test_unit_block_task_applies_map():
    async with facing_raw_peer() as (cx, peer, log):
        response = cx.prepare_request(prepared_message()).map(lambda v: v["value"]).block_task()
        request = await log.next()
        respond(peer, request["id"], OK)
        with anyio.fail_after(TIMEOUT):
            assert await response == 42
        assert await log.until_mark(cx) == []


async def test_unit_detach_publishes_without_ordering_and_discards_the_answer():
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        prepared.detach()
        request = await log.next()
        assert cx._table.pending(request["id"]).ordered is False
        respond(peer, request["id"], error=INVALID)
        assert await barrier_from_peer(log) == []
        assert await log.until_mark(cx) == []
        assert cx._table.outgoing_count == 0


async def test_unit_handle_taken_before_detach_can_still_cancel_while_pending():
    # acp_fast keeps cancellation handles working after detach() (the Rust SDK
    # disarms them): "fire and forget, but stoppable". detach() itself, and
    # the detached request's own cancel(), never send anything.
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(prepared_message())
        handle = sent.cancellation_handle()
        sent.detach()
        sent.cancel()
        gc.collect()
        assert [m.get("method") for m in await log.until_mark(cx, "1")] == ["prepared"]
        handle.cancel()
        handle.cancel()
        assert [is_cancel(m, sent.id) for m in await log.until_mark(cx, "2")] == [True]
        respond(peer, sent.id, error=acp.Error.request_cancelled().to_dict())
        assert await barrier_from_peer(log) == []
        handle.cancel()
        assert await log.until_mark(cx, "3") == []


async def test_unit_callback_consumers_are_ordered_and_cancel_after_routing_is_silent():
    order: list[str] = []

    async def note(message: acp.UntypedMessage, cx: Any) -> None:
        order.append(message.method)

    builder = acp.UntypedRole.builder().on_receive_notification(note)
    from tests.support import SIMPLE, echo

    builder.on_receive_request(echo, SIMPLE)
    async with facing_raw_peer(builder) as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        handle = prepared.cancellation_handle()
        prepared.on_receiving_result(lambda result: order.append("callback"))
        request = await log.next()
        assert cx._table.pending(request["id"]).ordered is True
        respond(peer, request["id"], OK)
        peer.send({"jsonrpc": "2.0", "method": "next", "params": {}})
        await barrier_from_peer(log)
        assert order == ["callback", "next"]
        handle.cancel()
        assert await log.until_mark(cx) == []


async def test_unit_callback_error_releases_the_barrier_and_fails_the_connection():
    async def failing(result: Any) -> None:
        raise acp.Error.invalid_params("callback failed")

    with pytest.raises(acp.Error) as caught:
        async with facing_raw_peer() as (cx, peer, log):
            cx.prepare_request(prepared_message()).on_receiving_result(failing)
            request = await log.next()
            respond(peer, request["id"], OK)
            with anyio.fail_after(TIMEOUT):
                await anyio.sleep_forever()  # the connection's failure ends this
    assert caught.value.code == -32602 and caught.value.data == "callback failed"


async def test_unit_registration_on_a_stopped_connection_publishes_nothing():
    async with facing_raw_peer() as (cx, peer, log):
        pass
    prepared = cx.prepare_request(prepared_message())
    handle = prepared.cancellation_handle()
    with pytest.raises(acp.Error, match="no longer running"):
        prepared.on_receiving_result(lambda result: None)
    handle.cancel()
    assert cx._table.outgoing_count == 0


@pytest.mark.parametrize("consumer", ["block_task", "callback", "detach"])
@pytest.mark.parametrize("failure", ["serialization", "incoming_closed", "driver_stopped"])
async def test_unit_publication_failures_reach_each_consumer_without_cancellation(
    failure, consumer
):
    seen: list[Any] = []

    async def exercise(cx: Any, log: Any) -> None:
        message = (
            acp.UntypedMessage("prepared", {"bad": object()})
            if failure == "serialization"
            else prepared_message()
        )
        prepared = cx.prepare_request(message)
        handle = prepared.cancellation_handle()
        if consumer == "block_task":
            try:
                await prepared.block_task()
            except acp.Error as error:
                seen.append(error)
        elif consumer == "callback":
            prepared.on_receiving_result(seen.append)
            if log is not None:
                await log.until_mark(cx, "callback ran")
        else:
            try:
                prepared.detach()
            except acp.Error as error:
                seen.append(error)
        handle.cancel()
        assert cx._table.outgoing_count == 0

    if failure == "driver_stopped":
        async with facing_raw_peer() as (cx, peer, log):
            pass
        if consumer == "callback":
            with pytest.raises(acp.Error, match="no longer running"):
                await exercise(cx, None)
            return
        await exercise(cx, None)
    else:
        async with facing_raw_peer() as (cx, peer, log):
            if failure == "incoming_closed":
                await peer.close_output()
                with anyio.fail_after(TIMEOUT):
                    await cx.incoming_closed()
            await exercise(cx, log)
            assert all(m.get("method") == MARK for m in await log.until_mark(cx, "end")) is True
    assert len(seen) == 1 and isinstance(seen[0], acp.Error)
    assert acp.is_incoming_transport_closed(seen[0]) == (failure == "incoming_closed")


async def test_unit_eof_after_publication_runs_the_callback_without_a_barrier():
    results: list[Any] = []
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        handle = prepared.cancellation_handle()
        prepared.on_receiving_result(results.append)
        await log.next()
        await peer.close_output()
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        handle.cancel()
        assert await log.until_mark(cx) == []
    assert len(results) == 1 and acp.is_incoming_transport_closed(results[0])


@pytest.mark.parametrize("consumer", ["forward", "ok_callback"])
@pytest.mark.parametrize("outcome", ["ok", "error"])
async def test_unit_forwarding_and_ok_callbacks_relay_peer_errors_verbatim(consumer, outcome):
    # upstream (a raw peer) -> cx (forwarding handler) -> downstream (a raw peer)
    from acp_fast.testing import memory_pair
    from tests.support import RawPeer

    down_ours, down_theirs = memory_pair()
    async with (
        RawPeer(down_theirs) as downstream,
        acp.UntypedRole.builder().connect(down_ours) as to_down,
    ):

        async def forward(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
            prepared = to_down.prepare_request(message)
            if consumer == "forward":
                prepared.forward_response_to(responder)
            else:
                prepared.on_receiving_ok_result(responder, lambda value, r: r.respond(value))

        builder = acp.UntypedRole.builder().on_receive_request(forward, "prepared")
        async with facing_raw_peer(builder) as (cx, upstream, log):
            upstream.send({"jsonrpc": "2.0", "id": "up-1", "method": "prepared", "params": {}})
            request = await downstream.receive()
            error = {"code": -32099, "message": "custom", "data": {"x": [1]}}
            respond(
                downstream,
                request["id"],
                OK if outcome == "ok" else None,
                None if outcome == "ok" else error,
            )
            answer = await log.next()
            if outcome == "ok":
                assert answer == {"jsonrpc": "2.0", "id": "up-1", "result": OK}
            else:
                assert answer == {"jsonrpc": "2.0", "id": "up-1", "error": error}


async def test_unit_already_cancelled_source_cancels_only_after_publication():
    async with facing_raw_peer() as (cx, peer, log):
        marker = acp.RequestCancellation()
        marker._state.fire()
        prepared = cx.prepare_request(prepared_message()).forward_cancellation_from(marker)
        assert await log.until_mark(cx, "1") == []
        prepared.on_receiving_result(lambda result: None)
        seen = await log.until_mark(cx, "2")
        assert [m.get("method") for m in seen] == ["prepared", "$/cancel_request"]
        assert is_cancel(seen[1], prepared.id)


async def test_unit_response_routed_before_the_consumer_keeps_cancellation_disarmed():
    results: list[Any] = []
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(prepared_message())
        request = await log.next()
        respond(peer, request["id"], OK)
        await barrier_from_peer(log)
        sent.cancel()
        sent.on_receiving_result(results.append)
        await barrier_from_peer(log, "late callback ran")
        assert results == [OK]
        assert await log.until_mark(cx) == []


async def test_unit_cancel_never_raises_once_the_connection_is_gone():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(prepared_message())
        handle = sent.cancellation_handle()
        await log.next()
    sent.cancel()  # the output is closed: nothing to report, nothing raised
    handle.cancel()
    with pytest.raises(acp.Error, match="never received"):
        await sent


# --- PreparedRequest.cancel() and cancellation after detach (docs/cancellation.md) ---


async def test_prepared_cancel_before_publication_is_a_no_op_not_remembered():
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        prepared.cancel()  # nothing on the wire, and not remembered
        sent = prepared.block_task()
        request = await log.next()
        assert request["method"] == "prepared"
        assert await log.until_mark(cx, "no-cancel") == []
        respond(peer, request["id"], OK)
        with anyio.fail_after(TIMEOUT):
            assert await sent == OK
        assert log.cancels() == []


async def test_prepared_cancel_after_publication_sends_one_cancel():
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        sent = prepared.block_task()
        request = await log.next()
        prepared.cancel()
        prepared.cancel()
        sent.cancel()
        seen = await log.until_mark(cx, "one-cancel")
        assert [m for m in seen if m.get("method") == "$/cancel_request"] == [
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request["id"]}}
        ]
        respond(peer, request["id"], OK)
        with anyio.fail_after(TIMEOUT):
            assert await sent == OK


async def test_prepared_cancel_after_detach_sends_nothing():
    async with facing_raw_peer() as (cx, peer, log):
        prepared = cx.prepare_request(prepared_message())
        prepared.detach()
        request = await log.next()
        prepared.cancel()
        assert await log.until_mark(cx, "detached") == []
        respond(peer, request["id"], OK)
        assert log.cancels() == []


async def test_a_cancellation_handle_taken_after_detach_still_cancels():
    """docs/cancellation.md: detach disarms the handle, not the explicit
    cancellation handles, whenever they were taken."""
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(prepared_message())
        sent.detach()
        handle = sent.cancellation_handle()
        request = await log.next()
        sent.cancel()  # the detached handle itself: nothing
        assert await log.until_mark(cx, "before") == []
        handle.cancel()
        seen = await log.until_mark(cx, "after")
        assert [m for m in seen if is_cancel(m, request["id"])] == seen
        assert len(seen) == 1
        respond(peer, request["id"], OK)
