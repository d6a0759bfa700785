"""Class-API requests start eagerly (docs/semantics.md §2.4, eager start).

A request's method runs its first step in the dispatch loop itself. If it
returns without suspending, it was answered with no task of its own. If it
suspends, it detaches: the loop reads on in a new task and the request
finishes in the task that started it, with everything it entered before its
first ``await`` (cancel scopes, requests it sent) still its own.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.rpc.wire import facing_raw_peer, respond

pytestmark = pytest.mark.anyio


def call(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def note(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


def task_id() -> int:
    return anyio.get_current_task().id


class Recorder(acp.BaseAgent):
    """Records, per message, the task that ran it."""

    def __init__(self) -> None:
        self.tasks: list[tuple[str, int]] = []
        self.release = anyio.Event()
        self.scopes: list[anyio.CancelScope] = []
        self.marked = anyio.Event()

    async def ext_method(self, method: str, params: Any) -> Any:
        self.tasks.append((method, task_id()))
        if method == "_wait":  # suspends until the peer's "_release"
            await self.release.wait()
            self.tasks.append(("_wait done", task_id()))
        elif method == "_scoped":  # a scope entered before the first await
            with anyio.CancelScope() as scope:
                self.scopes.append(scope)
                await anyio.sleep_forever()
            return {"stopped": scope.cancelled_caught}
        elif method == "_ask":  # a request sent and awaited in the first step
            question = acp.UntypedMessage("_peer/question", {"n": params["n"]})
            answer = await self.client.cx.send_request(question)
            return {"peer said": answer}
        return {"ran": method}

    async def ext_notification(self, method: str, params: Any) -> None:
        self.tasks.append((method, task_id()))
        if method == "_release":
            self.release.set()
        elif method == "_marker":
            self.marked.set()
        elif method == "_stop":
            for scope in self.scopes:
                scope.cancel()


async def test_a_request_that_never_suspends_runs_in_the_dispatch_loop() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(note("_before"))
        peer.send(call(1, "_instant"))
        peer.send(note("_after"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"ran": "_instant"}}
        peer.send(call(2, "_instant"))  # the loop has read "_after" before this
        await log.next()
    names = [name for name, _ in agent.tasks]
    assert names == ["_before", "_instant", "_after", "_instant"]
    # Notifications run in the dispatch loop: the request ran in that task too.
    assert len({task for _, task in agent.tasks}) == 1


async def test_a_request_that_suspends_finishes_in_its_task_while_the_loop_reads_on() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_wait"))
        # Read only if the loop went on without the suspended request.
        peer.send(call(2, "_instant"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"ran": "_instant"}}
        peer.send(note("_release"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"ran": "_wait"}}
    tasks = dict(agent.tasks)
    assert tasks["_wait"] == tasks["_wait done"]  # started and finished in one task
    assert tasks["_instant"] != tasks["_wait"]  # the loop read on in another
    assert tasks["_release"] == tasks["_instant"]


async def test_a_cancel_scope_entered_before_the_first_await_stays_with_its_request() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_scoped"))
        peer.send(note("_stop"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"stopped": True}}
        # The loop's task was not cancelled with the request's scope.
        peer.send(call(2, "_instant"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"ran": "_instant"}}


async def test_the_peers_cancel_stops_a_detached_request_and_no_other() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_scoped"))
        peer.send(call(2, "_wait"))
        peer.send(note("$/cancel_request", {"requestId": 1}))
        answer = await log.next()
        assert answer["id"] == 1 and answer["error"]["code"] == -32800
        peer.send(note("_release"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"ran": "_wait"}}


async def test_a_request_awaited_in_the_first_step_is_not_a_dispatch_loop_deadlock() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        for n in range(3):  # each detaches while it waits for the peer's answer
            peer.send(call(f"ask-{n}", "_ask", {"n": n}))
        questions = [await log.next() for _ in range(3)]
        assert [q["params"] for q in questions] == [{"n": 0}, {"n": 1}, {"n": 2}]
        for question in reversed(questions):
            respond(peer, question["id"], {"answer": question["params"]["n"]})
        answers = {}
        for _ in range(3):
            message = await log.next()
            answers[message["id"]] = message["result"]
        assert answers == {f"ask-{n}": {"peer said": {"answer": n}} for n in range(3)}


class Limited(Recorder):
    max_concurrent_requests = 2


async def test_a_request_beyond_the_limit_waits_and_starts_when_a_detached_one_ends() -> None:
    agent = Limited()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_wait"))
        peer.send(call(2, "_wait"))
        peer.send(call(3, "_queued"))  # both slots are held by detached requests
        peer.send(note("_marker"))  # read after it: the loop was not held up
        await agent.marked.wait()
        assert "_queued" not in [name for name, _ in agent.tasks]
        peer.send(note("_release"))
        answers = {(await log.next())["id"] for _ in range(3)}
        assert answers == {1, 2, 3}
    assert [name for name, _ in agent.tasks].count("_queued") == 1
