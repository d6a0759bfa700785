"""Outgoing cancellation in its Python forms (docs/semantics.md §3, §7).

The peer is played on the raw wire, so "exactly one cancel, after its
request" is checked against what was actually written.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.rpc.wire import barrier_from_peer, facing_raw_peer, is_cancel, respond
from tests.support import SIMPLE, TIMEOUT, simple

pytestmark = pytest.mark.anyio

SLOW = acp.UntypedMessage("slow", {})


@pytest.mark.parametrize("answer", ["partial result", "cancelled"])
async def test_cancel_sends_one_cancel_after_the_request_and_keeps_the_answer(answer):
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(SLOW)
        sent.cancel()
        sent.cancel()
        sent.cancellation_handle().cancel()
        request, cancel = await log.next(), await log.next()
        assert request["id"] == sent.id and is_cancel(cancel, sent.id)
        if answer == "partial result":
            respond(peer, sent.id, {"partial": True})
            with anyio.fail_after(TIMEOUT):
                assert await sent == {"partial": True}
        else:
            respond(peer, sent.id, error=acp.Error.request_cancelled().to_dict())
            with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
                await sent
            assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
        sent.cancel()
        assert await log.until_mark(cx) == []


async def test_cancelling_the_awaiting_task_sends_one_cancel():
    async with facing_raw_peer() as (cx, peer, log):
        outcome: list[str] = []

        async def await_it(task_status: Any) -> None:
            with anyio.CancelScope() as scope:
                task_status.started(scope)
                await cx.send_request(SLOW)
            outcome.append("cancelled" if scope.cancelled_caught else "finished")

        async with anyio.create_task_group() as group:
            scope = await group.start(await_it)
            request = await log.next()
            scope.cancel()
        assert outcome == ["cancelled"]
        assert is_cancel(await log.next(), request["id"])
        # The late answer is routed and discarded; the connection goes on.
        respond(peer, request["id"], {"late": True})
        assert await barrier_from_peer(log) == []
        assert await log.until_mark(cx) == []
        assert cx._table.outgoing_count == 0


async def test_a_timeout_on_the_await_sends_one_cancel():
    async with facing_raw_peer() as (cx, peer, log):
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.05):
                await cx.send_request(SLOW)
        request, cancel = await log.next(), await log.next()
        assert is_cancel(cancel, request["id"])
        assert await log.until_mark(cx) == []


async def test_a_request_answered_before_the_timeout_sends_no_cancel():
    async with facing_raw_peer() as (cx, peer, log):

        async def answer_it() -> None:
            request = await log.next()
            respond(peer, request["id"], "done")

        async with anyio.create_task_group() as group:
            group.start_soon(answer_it)
            with anyio.fail_after(TIMEOUT):
                assert await cx.send_request(SLOW) == "done"
        assert await log.until_mark(cx) == []


async def test_eof_fails_pending_requests_and_disarms_them():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(SLOW)
        handle = sent.cancellation_handle()
        await log.next()
        await peer.close_output()
        with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
            await sent
        assert acp.is_incoming_transport_closed(caught.value)
        assert caught.value.data == {"reason": "incoming_transport_closed", "method": "slow"}
        sent.cancel()
        handle.cancel()
        assert await log.until_mark(cx) == []


async def test_a_request_made_after_eof_fails_at_once_and_sends_nothing():
    async with facing_raw_peer() as (cx, peer, log):
        await peer.close_output()
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        sent = cx.send_request(SLOW)
        sent.cancel()
        with pytest.raises(acp.Error) as caught:
            await sent
        assert acp.is_incoming_transport_closed(caught.value)
        assert await log.until_mark(cx) == []


async def test_map_transforms_results_and_lets_errors_through():
    async with facing_raw_peer() as (cx, peer, log):
        ok = cx.send_request(SLOW).map(lambda value: value["n"] * 2)
        failed = cx.send_request(SLOW).map(lambda value: pytest.fail("not called for errors"))
        first, second = await log.next(), await log.next()
        respond(peer, first["id"], {"n": 21})
        respond(peer, second["id"], error={"code": -32099, "message": "nope"})
        with anyio.fail_after(TIMEOUT):
            assert await ok == 42
            with pytest.raises(acp.Error, match="nope"):
                await failed


async def test_a_request_is_consumed_once():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(SLOW)
        sent.on_receiving_result(lambda result: None)
        with pytest.raises(RuntimeError, match="already consumed"):
            sent.detach()
        with pytest.raises(RuntimeError, match="already consumed"):
            await sent
        with pytest.raises(RuntimeError, match="already consumed"):
            sent.map(str)


async def test_awaiting_a_response_inside_the_dispatch_loop_raises_instead_of_deadlocking():
    errors: list[str] = []

    async def handler(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        try:
            await cx.send_request(acp.UntypedMessage("nested", {}))
        except RuntimeError as error:
            errors.append(str(error))
            raise

    builder = acp.UntypedRole.builder().on_receive_request(handler, "outer")
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "outer"})
        nested, answer = await log.next(), await log.next()
        assert nested["method"] == "nested"
        # The nested request was not consumed by the failed await: dropping it
        # would cancel it; the handler's failure answered the outer request.
        assert answer["id"] == 1 and answer["error"]["code"] == -32603
        assert "RuntimeError" in answer["error"]["data"]["details"]
    assert len(errors) == 1 and "dispatch loop" in errors[0] and "deadlock" in errors[0]


async def test_awaiting_from_a_spawned_task_inside_a_handler_works():
    async def handler(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        async def work() -> None:
            responder.respond(await cx.send_request(acp.UntypedMessage("nested", {})))

        cx.spawn(work)

    builder = acp.UntypedRole.builder().on_receive_request(handler, "outer")
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "outer"})
        nested = await log.next()
        respond(peer, nested["id"], "inner answer")
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": "inner answer"}


async def test_forwarded_source_already_cancelled_cancels_right_after_the_request():
    async with facing_raw_peer() as (cx, peer, log):
        marker = acp.RequestCancellation()
        marker._state.fire()
        sent = cx.send_request(SLOW).forward_cancellation_from(marker)

        async def await_it() -> None:
            try:
                await sent
            except acp.Error:
                pass

        async with anyio.create_task_group() as group:
            group.start_soon(await_it)
            request, cancel = await log.next(), await log.next()
            assert is_cancel(cancel, request["id"])
            respond(peer, request["id"], error=acp.Error.request_cancelled().to_dict())


async def test_raw_cancel_requests_are_independent_of_request_state():
    # Documented: send_cancel_request does not spend a handle's token, so
    # combining it with a handle's cancel() gives two cancels.
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(SLOW)
        cx.send_cancel_request(sent.id)
        sent.cancel()
        seen = await log.until_mark(cx)
        assert [is_cancel(m, sent.id) for m in seen] == [False, True, True]
        with pytest.raises(ValueError):
            cx.send_cancel_request(1.5)
        sent.detach()


async def test_no_reply_is_ever_sent_to_cancel_request_notifications():
    async with facing_raw_peer() as (cx, peer, log):
        for params in (
            {"requestId": "unknown"},
            {"requestId": True},
            {"requestId": {"x": 1}},
            {},
            None,
        ):
            message = {"jsonrpc": "2.0", "method": "$/cancel_request"}
            if params is not None:
                message["params"] = params
            peer.send(message)
        assert await barrier_from_peer(log) == []


async def test_cancel_request_sent_as_a_request_is_not_a_cancellation():
    async with facing_raw_peer() as (cx, peer, log):
        peer.send(
            {"jsonrpc": "2.0", "id": 9, "method": "$/cancel_request", "params": {"requestId": 1}}
        )
        answer = await log.next()
        assert answer["id"] == 9 and answer["error"]["code"] == acp.ErrorCode.METHOD_NOT_FOUND


async def test_sent_request_in_a_connection_that_is_gone_fails_clearly():
    async with facing_raw_peer() as (cx, peer, log):
        pass
    with pytest.raises(acp.Error, match="no longer running"):
        await cx.send_request(simple("late"))
    with pytest.raises(acp.Error, match="no longer running"):
        cx.send_notification(acp.UntypedMessage(SIMPLE, {}))


async def test_a_handle_used_as_a_guard_cancels_when_the_block_is_left_early():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(SLOW)
        with pytest.raises(KeyError), sent.cancellation_handle():
            raise KeyError("left early")
        request, cancel = await log.next(), await log.next()
        assert is_cancel(cancel, request["id"])
        sent.detach()


async def test_a_guard_left_after_the_answer_sends_nothing():
    async with facing_raw_peer() as (cx, peer, log):

        async def answer_it() -> None:
            request = await log.next()
            respond(peer, request["id"], "answer")

        async with anyio.create_task_group() as group:
            group.start_soon(answer_it)
            with cx.send_request(SLOW) as sent, anyio.fail_after(TIMEOUT):
                assert await sent == "answer"
        assert await log.until_mark(cx) == []
