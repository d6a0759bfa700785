"""docs/semantics.md §6.I (#96–#106): the ordering barrier and JSON-RPC batches (§1.5, §2.4)."""

from __future__ import annotations

import gc
from typing import Any, ClassVar

import anyio
import msgspec
import pytest

import acp_fast as acp
from tests.rpc.wire import barrier_from_peer, facing_raw_peer, respond
from tests.support import SIMPLE, TIMEOUT, echo

pytestmark = pytest.mark.anyio


class Typed(msgspec.Struct):
    """A typed test message: ``typed`` with a required ``message``."""

    METHOD: ClassVar[str] = "typed"
    message: str


def recording_builder(seen: list[str]) -> acp.Builder[Any]:
    async def record(message: acp.UntypedMessage, cx: Any) -> None:
        seen.append(message.method)

    return (
        acp.UntypedRole.builder().on_receive_request(echo, SIMPLE).on_receive_notification(record)
    )


async def test_s96_callback_consumes_response_before_following_message_is_dispatched():
    seen: list[str] = []
    held, release = anyio.Event(), anyio.Event()

    async def callback(result: Any) -> None:
        seen.append(f"callback {result}")
        held.set()
        await release.wait()

    async with facing_raw_peer(recording_builder(seen)) as (cx, peer, log):
        cx.send_request(acp.UntypedMessage("ask", {})).on_receiving_result(callback)
        request = await log.next()
        respond(peer, request["id"], "answer")
        peer.send({"jsonrpc": "2.0", "method": "following"})
        with anyio.fail_after(TIMEOUT):
            await held.wait()
        assert seen == ["callback answer"]
        release.set()
        await barrier_from_peer(log)
        assert seen == ["callback answer", "following"]


async def test_s97_unconsumed_response_does_not_block_following_message():
    seen: list[str] = []
    async with facing_raw_peer(recording_builder(seen)) as (cx, peer, log):
        sent = cx.send_request(acp.UntypedMessage("ask", {}))
        request = await log.next()
        respond(peer, request["id"], "answer")
        peer.send({"jsonrpc": "2.0", "method": "following"})
        await barrier_from_peer(log)
        assert seen == ["following"]
        with anyio.fail_after(TIMEOUT):
            assert await sent == "answer"


async def test_s98_ordered_callback_installs_dynamic_handler_before_later_batch_entry():
    received: list[str] = []

    async def late_handler(message: acp.UntypedMessage, cx: Any) -> None:
        received.append(message.method)

    async with facing_raw_peer() as (cx, peer, log):

        def install(result: Any) -> None:
            cx.add_dynamic_handler(
                acp.HandlerEntry.notification(late_handler, "session-update")
            ).detach()

        cx.send_request(acp.UntypedMessage("ask", {})).on_receiving_result(install)
        request = await log.next()
        peer.send(
            [
                {"jsonrpc": "2.0", "id": request["id"], "result": {}},
                {"jsonrpc": "2.0", "method": "session-update", "params": {}},
            ]
        )
        await barrier_from_peer(log)
        assert received == ["session-update"]


async def test_s99_mixed_batch_returns_one_array_with_each_response_bearing_entry():
    handled: list[str] = []

    async def typed(message: Typed, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond("typed ok")

    async def failing(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        raise acp.Error.internal_error("handler error won")

    async def good_note(message: Any, cx: Any) -> None:
        handled.append("note")

    async def bad_note(message: Any, cx: Any) -> None:
        raise acp.Error.internal_error("ignored")

    async def typed_note(message: Typed, cx: Any) -> None:
        handled.append("typed note")

    builder = (
        acp.UntypedRole.builder()
        .on_receive_request(echo, SIMPLE)
        .on_receive_request(typed, Typed)
        .on_receive_request(failing, "fail")
        .on_receive_notification(good_note, "note")
        .on_receive_notification(bad_note, "bad-note")
        .on_receive_notification(typed_note, Typed)
    )
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": SIMPLE, "params": {"message": "one"}},
                17,
                {"jsonrpc": "2.0", "id": 2, "method": "typed", "params": {"wrong": 1}},
                {"jsonrpc": "2.0", "id": 3, "method": "fail"},
                {"jsonrpc": "2.0", "method": "note"},
                {"jsonrpc": "2.0", "id": 4, "result": 1, "error": {"code": 1, "message": "x"}},
                {"jsonrpc": "2.0", "method": "typed", "params": {"wrong": 1}},
                {"jsonrpc": "2.0", "method": "bad-note"},
            ]
        )
        peer.send({"jsonrpc": "2.0", "id": 5, "method": SIMPLE, "params": {"message": "after"}})
        array = await log.next()
        assert isinstance(array, list) and len(array) == 4
        by_id = {str(entry["id"]): entry for entry in array}
        assert by_id["1"]["result"] == {"result": "echo: one"}
        assert by_id["None"]["error"]["code"] == -32600
        assert by_id["2"]["error"]["code"] == -32602
        assert by_id["3"]["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": "handler error won",
        }
        assert await log.next() == {"jsonrpc": "2.0", "id": 5, "result": {"result": "echo: after"}}
    assert handled == ["note"]


async def test_s100_batch_response_waits_for_trailing_notification_handler():
    entered, release = anyio.Event(), anyio.Event()

    async def slow_note(message: Any, cx: Any) -> None:
        entered.set()
        await release.wait()

    builder = acp.UntypedRole.builder().on_receive_request(echo, SIMPLE)
    builder.on_receive_notification(slow_note, "slow")
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": SIMPLE, "params": {"message": "one"}},
                {"jsonrpc": "2.0", "method": "slow"},
            ]
        )
        with anyio.fail_after(TIMEOUT):
            await entered.wait()
        assert await log.until_mark(cx, "held") == []  # the array is withheld
        release.set()
        array = await log.next()
        assert array == [{"jsonrpc": "2.0", "id": 1, "result": {"result": "echo: one"}}]


async def test_s101_incomplete_batch_withholds_partial_responses_without_blocking_standalone_calls():
    parked: list[acp.Responder[Any]] = []

    async def park(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        parked.append(responder)

    builder = (
        acp.UntypedRole.builder().on_receive_request(echo, SIMPLE).on_receive_request(park, "park")
    )
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "park"},
                {"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "two"}},
            ]
        )
        peer.send(
            {"jsonrpc": "2.0", "id": 3, "method": SIMPLE, "params": {"message": "standalone"}}
        )
        assert await log.next() == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"result": "echo: standalone"},
        }
        parked.pop().respond("late")
        array = await log.next()
        assert sorted(array, key=lambda e: e["id"]) == [
            {"jsonrpc": "2.0", "id": 1, "result": "late"},
            {"jsonrpc": "2.0", "id": 2, "result": {"result": "echo: two"}},
        ]


async def test_s102_dropped_batch_responder_gets_internal_error_without_stranding_siblings():
    async def drop(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        return None  # neither answers nor keeps the responder

    builder = (
        acp.UntypedRole.builder().on_receive_request(echo, SIMPLE).on_receive_request(drop, "drop")
    )
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 14, "method": "drop"},
                {"jsonrpc": "2.0", "id": 15, "method": SIMPLE, "params": {"message": "fifteen"}},
            ]
        )
        gc.collect()
        array = {entry["id"]: entry for entry in await log.next()}
        assert array[14]["error"]["code"] == -32603
        assert "dropped its responder" in array[14]["error"]["data"]
        assert array[15]["result"] == {"result": "echo: fifteen"}


async def test_s103_retried_batch_handler_error_wins_over_dropped_responder_fallback():
    async def defer(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        return acp.NotHandled(retry=True)

    async def failing(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        raise acp.Error.internal_error("retry handler error won")

    async def register(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        cx.add_dynamic_handler(acp.HandlerEntry.request(failing, "deferred")).detach()
        responder.respond("registered")

    builder = (
        acp.UntypedRole.builder()
        .on_receive_request(echo, SIMPLE)
        .on_receive_request(defer, "deferred")
        .on_receive_request(register, "register")
    )
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 16, "method": "deferred"},
                {"jsonrpc": "2.0", "id": 17, "method": SIMPLE, "params": {"message": "x"}},
            ]
        )
        gc.collect()
        assert await barrier_from_peer(log) == []  # the array waits for the parked entry
        peer.send({"jsonrpc": "2.0", "id": 18, "method": "register"})
        first, second = await log.next(), await log.next()
        assert first == {"jsonrpc": "2.0", "id": 18, "result": "registered"}
        array = {entry["id"]: entry for entry in second}
        assert array[16]["error"]["data"] == "retry handler error won"
        assert array[17]["result"] == {"result": "echo: x"}


async def test_s104_duplicate_completion_of_individual_request_is_ignored():
    async def answer_then_fail(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond("first")
        raise acp.Error.internal_error("second")

    builder = acp.UntypedRole.builder().on_receive_request(echo, SIMPLE)
    builder.on_receive_request(answer_then_fail, "twice")
    async with facing_raw_peer(builder) as (cx, peer, log):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "twice"})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "next"}})
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": "first"}
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"result": "echo: next"}}


async def test_s105_empty_batch_returns_one_invalid_request_and_connection_stays_usable():
    async with facing_raw_peer() as (cx, peer, log):
        peer.send("[]")
        assert await log.next() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid request"},
        }
        assert await barrier_from_peer(log) == []


async def test_s106_notification_only_batch_emits_nothing_before_following_barrier_response():
    seen: list[str] = []
    async with facing_raw_peer(recording_builder(seen)) as (cx, peer, log):
        peer.send([{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "method": "b"}])
        assert await barrier_from_peer(log) == []
        assert seen == ["a", "b"]


async def test_all_invalid_batch_gets_an_array_of_invalid_request_errors():
    async with facing_raw_peer() as (cx, peer, log):
        peer.send("[1,2,3]")
        array = await log.next()
        assert (
            array
            == [
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Invalid request"},
                }
            ]
            * 3
        )


async def test_responses_in_a_batch_are_routed_in_order():
    async with facing_raw_peer() as (cx, peer, log):
        first = cx.send_request(acp.UntypedMessage("a", {}))
        second = cx.send_request(acp.UntypedMessage("b", {}))
        a, b = await log.next(), await log.next()
        peer.send(
            [
                {"jsonrpc": "2.0", "id": b["id"], "result": "B"},
                {"jsonrpc": "2.0", "id": a["id"], "result": "A"},
            ]
        )
        with anyio.fail_after(TIMEOUT):
            assert (await first, await second) == ("A", "B")


async def test_duplicate_ids_within_a_batch_keep_distinct_slots():
    async with facing_raw_peer() as (cx, peer, log):
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "params": {"message": "x"}},
                {"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "params": {"message": "y"}},
            ]
        )
        array = await log.next()
        assert sorted(entry["result"]["result"] for entry in array) == ["echo: x", "echo: y"]
