"""Random sequences of request operations against a model of §3.4/§3.7.

Hypothesis draws a program of operations (send, prepare, publish, cancel,
cancel through a cloned handle, detach, drop, abandon an await, answer, and
finally EOF); the program runs against a connection whose peer is played on
the raw wire. A model predicts, per request, whether exactly one
``$/cancel_request`` must go out. Checked on the wire afterwards:

* at most one cancel per request, and exactly the predicted ones;
* never a cancel before its request;
* never a cancel after the request's answer was routed (the peer runs a
  barrier after each answer, so anything written later is "after");
* the request table and the incoming registry are empty at the end.

The program runs on both backends and, by swapping the core classes the
connection uses, on both cores.
"""

from __future__ import annotations

import gc
import warnings
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import acp_fast as acp
import acp_fast._async.connection as connection_module
import acp_fast._async.dispatch as dispatch_module
import acp_fast._async.inbound as inbound_module
from tests.helpers import CoreImpl
from tests.rpc.wire import barrier_from_peer, facing_raw_peer, respond

OPERATIONS = (
    "send",
    "prepare",
    "publish",
    "cancel",
    "handle_cancel",
    "detach",
    "drop",
    "abandon",
    "answer",
)

programs = st.lists(
    st.tuples(st.sampled_from(OPERATIONS), st.integers(0, 7)), min_size=1, max_size=25
)


@dataclass
class Tracked:
    """One request as the model sees it."""

    handle: Any  # SentRequest, PreparedRequest or None once dropped
    cancel_handle: Any
    published: bool = False
    routed: bool = False
    consumed: bool = False  # awaited, called back, detached
    detached: bool = False
    cancel_expected: bool = False
    id: Any = None
    events: list[str] = field(default_factory=list)

    def may_cancel(self) -> bool:
        return self.published and not self.routed and not self.cancel_expected


def track(handle: Any, published: bool) -> Tracked:
    return Tracked(handle, handle.cancellation_handle(), published=published, id=handle.id)


async def await_then_abandon(item: Tracked, done: anyio.Event, task_status: Any) -> None:
    sent, item.handle = item.handle, None
    try:
        with anyio.CancelScope() as scope:
            task_status.started(scope)
            try:
                await sent
            except acp.Error:
                pass
    finally:
        done.set()


async def run_program(program: list[tuple[str, int]]) -> None:
    tracked: list[Tracked] = []
    async with facing_raw_peer() as (cx, peer, log):
        async with anyio.create_task_group() as group:
            for operation, n in program:
                item = tracked[n % len(tracked)] if tracked else None
                # (No local variable may keep a handle alive: "drop" must drop.)
                if operation == "send":
                    tracked.append(track(cx.send_request(acp.UntypedMessage("op", {})), True))
                elif operation == "prepare":
                    tracked.append(track(cx.prepare_request(acp.UntypedMessage("op", {})), False))
                elif item is None or item.handle is None:
                    continue
                elif operation == "publish" and not item.published:
                    item.published = True
                    if n % 3 == 0:
                        item.handle = item.handle.block_task()  # a SentRequest, unconsumed
                    elif n % 3 == 1:
                        item.handle.on_receiving_result(lambda result: None)
                        item.handle, item.consumed = None, True
                    else:
                        item.handle.detach()
                        item.handle, item.consumed, item.detached = None, True, True
                elif operation == "cancel" and isinstance(item.handle, acp.SentRequest):
                    item.handle.cancel()
                    if item.may_cancel() and not item.detached:
                        item.cancel_expected = True
                elif operation == "handle_cancel":
                    item.cancel_handle.clone().cancel()
                    if item.may_cancel():
                        item.cancel_expected = True
                elif (
                    operation == "detach"
                    and isinstance(item.handle, acp.SentRequest)
                    and not item.consumed
                ):
                    item.handle.detach()
                    item.consumed = item.detached = True
                    item.handle = None
                elif operation == "drop":
                    if (
                        isinstance(item.handle, acp.SentRequest)
                        and not item.consumed
                        and item.may_cancel()
                    ):
                        item.cancel_expected = True
                    item.handle = None
                    gc.collect()
                elif (
                    operation == "abandon"
                    and isinstance(item.handle, acp.SentRequest)
                    and not item.consumed
                ):
                    item.consumed = True
                    if item.may_cancel():
                        item.cancel_expected = True
                    # The cancel goes out when the awaiting task unwinds, which
                    # is after scope.cancel() returns: wait for that.
                    done = anyio.Event()
                    scope = await group.start(await_then_abandon, item, done)
                    scope.cancel()
                    await done.wait()
                elif operation == "answer" and item.published and not item.routed:
                    item.routed = True
                    respond(peer, item.id, {"n": n})
                    item.events.append(f"answered@{len(log.messages)}")
                    await barrier_from_peer(log, str(len(log.messages)))
                    item.events.append(f"routed@{len(log.messages)}")
            await log.until_mark(cx, "end")

        # Check the wire against the model.
        positions: dict[Any, int] = {}
        cancels: dict[Any, list[int]] = {}
        for index, message in enumerate(log.messages):
            if message.get("method") == "op":
                positions[message["id"]] = index
            elif message.get("method") == "$/cancel_request":
                cancels.setdefault(message["params"]["requestId"], []).append(index)
        for item in tracked:
            sent_at = cancels.get(item.id, [])
            assert len(sent_at) == (1 if item.cancel_expected else 0), (item, program)
            for index in sent_at:
                assert positions[item.id] < index, ("cancel before its request", program)
                routed = [int(e.split("@")[1]) for e in item.events if e.startswith("routed@")]
                assert not routed or index < routed[0], ("cancel after routing", program)
            assert (item.id in positions) == item.published

        # EOF settles everything; then both tables are empty.
        await peer.close_output()
        with anyio.fail_after(5):
            await cx.incoming_closed()
        assert cx._table.outgoing_count == 0
        assert cx._table.incoming_count == 0
        assert await log.until_mark(cx, "after eof") == []


@pytest.fixture(params=[pytest.param("c", marks=pytest.mark.c_extension), "py"])
def core_classes(request, monkeypatch):
    """Make new connections use one core's classes (the c variant is
    deselected in the pure-Python pass, like every compiled-core test)."""
    core = CoreImpl(request.param)
    for name in (
        "RequestTable",
        "LineBuffer",
        "classify",
        "is_valid_id",
        "params_head_of",
        "scan_head",
    ):
        for module in (connection_module, dispatch_module, inbound_module):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, getattr(core, name))
    return request.param


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=programs)
def test_random_request_programs_match_the_model(core_classes, backend, program):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", acp.AbandonedRequestWarning)
        anyio.run(run_program, program, backend=backend)
