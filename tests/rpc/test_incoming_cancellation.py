"""Incoming cancellation: the registry and the markers (docs/semantics.md §4).

The raw peer sends requests and ``$/cancel_request`` notifications; handlers
on the connection under test observe their ``responder.cancellation()``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.rpc.wire import barrier_from_peer, facing_raw_peer
from tests.support import SIMPLE, TIMEOUT, echo

pytestmark = pytest.mark.anyio


def request(request_id: Any, method: str = "park") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}


def cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}


class Parker:
    """A builder whose ``park`` handler keeps responders for the test."""

    def __init__(self) -> None:
        self.responders: list[acp.Responder[Any]] = []
        self.builder = acp.UntypedRole.builder().on_receive_request(self.park, "park")
        self.builder.on_receive_request(echo, SIMPLE)

    async def park(self, message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        self.responders.append(responder)


async def test_the_marker_is_set_before_a_handler_that_claims_the_notification():
    parker = Parker()
    seen: list[bool] = []

    async def claim(message: Any, cx: Any) -> None:
        seen.append(parker.responders[0].cancellation().is_cancelled())

    parker.builder.on_receive_notification(claim, "$/cancel_request")
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        peer.send(cancel(1))
        await barrier_from_peer(log)
        assert seen == [True]


async def test_typed_observer_sees_cancels_without_replacing_the_built_in_handling():
    from acp_fast.schema import v1

    parker = Parker()
    observed: list[Any] = []

    async def observe(notification: v1.CancelRequestNotification, cx: Any) -> None:
        observed.append(
            (notification.request_id, parker.responders[0].cancellation().is_cancelled())
        )

    parker.builder.on_receive_notification(observe, v1.CancelRequestNotification)
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request("r-1"))
        peer.send(cancel("r-1"))
        await barrier_from_peer(log)
    assert observed == [("r-1", True)]


async def test_unknown_ids_and_malformed_cancels_reach_no_marker_and_malformed_reach_no_handler():
    parker = Parker()
    notified: list[Any] = []

    async def catch_all(message: acp.UntypedMessage, cx: Any) -> None:
        notified.append(message.params)

    parker.builder.on_receive_notification(catch_all)
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        peer.send(cancel(2))  # unknown: passed on to handlers, changes nothing
        peer.send(cancel("1"))  # a string is another id than 1
        for params in (
            {"requestId": True},
            {"requestId": {"a": 1}},
            {"requestId": 1.0},
            {"other": 1},
        ):
            peer.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": params})
        assert await barrier_from_peer(log) == []  # and no reply to any of them
        assert not parker.responders[0].cancellation().is_cancelled()
        assert notified == [{"requestId": 2}, {"requestId": "1"}]


async def test_cancelled_wakes_waiters_and_markers_are_shared():
    parker = Parker()
    woke = anyio.Event()

    async def wait_for_it(responder: acp.Responder[Any]) -> None:
        await responder.cancellation().cancelled()
        woke.set()
        responder.respond_with_error(acp.Error.request_cancelled())

    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        await barrier_from_peer(log)
        responder = parker.responders[0]
        first, second = responder.cancellation(), responder.cancellation()
        cx.spawn(wait_for_it, responder)
        assert not first.is_cancelled() and not second.is_cancelled()
        peer.send(cancel(1))
        with anyio.fail_after(TIMEOUT):
            await woke.wait()
        assert first.is_cancelled() and second.is_cancelled()
        assert (await log.next())["error"]["code"] == acp.ErrorCode.REQUEST_CANCELLED


async def test_run_until_cancelled_does_not_start_work_already_cancelled():
    parker = Parker()
    started: list[str] = []

    async def work() -> str:
        started.append("work")
        return "done"

    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        peer.send(cancel(1))
        await barrier_from_peer(log)
        marker = parker.responders[0].cancellation()
        with pytest.raises(acp.Error) as caught:
            await marker.run_until_cancelled(work)
        assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
        coroutine = work()
        with pytest.raises(acp.Error):
            await marker.run_until_cancelled(coroutine)  # an awaitable is closed, unstarted
        assert started == []
        parker.responders[0].respond(None)


async def test_run_until_cancelled_stops_the_work_when_cancellation_wins():
    parker = Parker()
    events: list[str] = []
    running = anyio.Event()

    async def work() -> str:
        try:
            running.set()
            await anyio.sleep_forever()
        finally:
            events.append("work stopped")
        return "unreachable"

    async def run(responder: acp.Responder[Any]) -> None:
        try:
            responder.respond(await responder.cancellation().run_until_cancelled(work))
        except acp.Error as error:
            events.append("cancelled")
            responder.respond_with_error(error)

    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        await barrier_from_peer(log)
        cx.spawn(run, parker.responders[0])
        with anyio.fail_after(TIMEOUT):
            await running.wait()
        peer.send(cancel(1))
        answer = await log.next()
    assert answer == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32800, "message": "Request cancelled"},
    }
    assert events == ["work stopped", "cancelled"]


async def test_run_until_cancelled_the_work_wins_a_tie():
    parker = Parker()
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        await barrier_from_peer(log)
        marker = parker.responders[0].cancellation()

        async def instant() -> str:
            # The cancellation lands in the very step the work finishes in.
            marker._state.fire()
            return "work value"

        assert await marker.run_until_cancelled(instant) == "work value"
        assert marker.is_cancelled()
        parker.responders[0].respond(None)


async def test_a_request_reusing_an_id_in_flight_is_refused_and_the_first_is_undisturbed():
    """docs/semantics.md §1.4, §4.4: -32600 echoing the id; one id names one request."""
    parker = Parker()
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(5))
        await barrier_from_peer(log, "1")
        first = parker.responders[0]
        marker = first.cancellation()
        peer.send(request(5))  # a peer reusing an id: a protocol violation
        refused = await log.next()
        assert refused["id"] == 5 and refused["error"]["code"] == -32600
        assert len(parker.responders) == 1 and cx._table.incoming_count == 1
        peer.send(cancel(5))
        await barrier_from_peer(log, "2")
        assert marker.is_cancelled()  # the cancel reaches the first request
        first.respond("first answer")
        assert cx._table.incoming_count == 0
        assert (await log.next())["result"] == "first answer"
        peer.send(request(5))  # answered: the id may be used again
        await barrier_from_peer(log, "3")
        assert len(parker.responders) == 2
        parker.responders[1].respond("again")
        assert (await log.next())["result"] == "again"


async def test_a_batch_entry_reusing_an_id_in_flight_is_refused_in_its_slot():
    parker = Parker()
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(9))
        await barrier_from_peer(log, "1")
        echo_10 = {"jsonrpc": "2.0", "id": 10, "method": SIMPLE, "params": {"message": "x"}}
        peer.send([request(9, SIMPLE), echo_10])
        batch = await log.next()
        assert isinstance(batch, list)
        assert batch[0]["id"] == 9 and batch[0]["error"]["code"] == -32600
        assert batch[1]["id"] == 10 and "result" in batch[1]
        parker.responders[0].respond("first")
        assert (await log.next())["result"] == "first"


async def test_a_marker_taken_after_the_answer_is_detached():
    parker = Parker()
    async with facing_raw_peer(parker.builder) as (cx, peer, log):
        peer.send(request(1))
        await barrier_from_peer(log)
        responder = parker.responders[0]
        responder.respond("done")
        peer.send(cancel(1))
        await barrier_from_peer(log, "2")
        assert not responder.cancellation().is_cancelled()
        with pytest.raises(RuntimeError, match="already answered"):
            responder.respond("again")


async def test_wrapped_cancels_are_peeled_to_any_depth():
    seen: list[bool] = []
    responders: list[acp.Responder[Any]] = []

    async def park(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responders.append(responder)

    async def after(message: Any, cx: Any) -> None:
        seen.append(responders[0].cancellation().is_cancelled())

    builder = (
        acp.UntypedRole.builder()
        .on_receive_request(park, "park")
        .on_receive_request(echo, SIMPLE)
        .on_receive_notification(after, "after")
    )
    inner: dict[str, Any] = {"method": "$/cancel_request", "params": {"requestId": 1}}
    for _ in range(3):
        inner = {"method": "_proxy/successor", "params": inner}
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(request(1))
        peer.send({"jsonrpc": "2.0", **inner})
        peer.send({"jsonrpc": "2.0", "method": "after"})
        await barrier_from_peer(log)
    assert seen == [True]
