"""Class-API requests start eagerly (docs/semantics.md §2.4, eager start).

A request's method runs its first step in the dispatch loop itself. If it
returns without suspending, it was answered with no task of its own. If it
suspends, it detaches: the loop reads on in a new task and the request
finishes in the task that started it, with everything it entered before its
first ``await`` (cancel scopes, requests it sent) still its own.
"""

from __future__ import annotations

import contextvars
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from acp_fast.testing import memory_pair
from tests.rpc.wire import facing_raw_peer, respond
from tests.support import RawPeer

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


async def test_handlers_added_before_a_request_detaches_take_the_next_message() -> None:
    # serve_versioned_agent routes initialize, adds the chosen version's
    # handlers, then runs its initialize: one that awaits detaches.
    class Awaits(acp.BaseAgent):
        async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
            await anyio.lowlevel.checkpoint()  # any real await
            return await super().initialize(request)

        async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id="s-1")

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(partial(acp.serve_versioned_agent, v1=Awaits(), transport=ours))
        async with RawPeer(theirs) as peer:
            peer.send(call(1, "initialize", {"protocolVersion": 1}))
            assert "result" in await peer.receive()
            peer.send(call(2, "session/new", {"cwd": "/", "mcpServers": []}))
            assert await peer.receive() == {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {"sessionId": "s-1"},
            }
        group.cancel_scope.cancel()


request_tag: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_tag", default=None
)


async def test_a_context_variable_set_before_detaching_stays_with_its_request() -> None:
    class Tags(Recorder):
        async def ext_method(self, method: str, params: Any) -> Any:
            if method == "_tag":
                request_tag.set("tagged")
                await self.release.wait()
                return {"tag": request_tag.get()}
            return {"tag": request_tag.get()}

    agent = Tags()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_tag"))
        peer.send(call(2, "_look"))  # read by the next reader
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"tag": None}}
        peer.send(note("_release"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"tag": "tagged"}}


class OneSlot(acp.BaseAgent):
    max_concurrent_requests = 1

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.releases: dict[str, anyio.Event] = {}

    async def ext_method(self, method: str, params: Any) -> Any:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if method == "_stubborn":  # returns a value although cancelled
                try:
                    await anyio.sleep_forever()
                except anyio.get_cancelled_exc_class():
                    return {"partial": True}
            release = self.releases.setdefault(params["key"], anyio.Event())
            await release.wait()
            return {"done": params["key"]}
        finally:
            self.running -= 1

    async def ext_notification(self, method: str, params: Any) -> None:
        self.releases.setdefault(params["key"], anyio.Event()).set()


async def test_the_limit_holds_after_a_worker_request_outlives_its_cancel() -> None:
    agent = OneSlot()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_hold", {"key": "a"}))  # starts eagerly, takes the slot
        peer.send(call(2, "_stubborn"))  # waits, then runs on a worker
        peer.send(note("_go", {"key": "a"}))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"done": "a"}}
        peer.send(note("$/cancel_request", {"requestId": 2}))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"partial": True}}
        # The worker is parked now; the slot was given back once.
        for n in range(3, 6):
            peer.send(call(n, "_hold", {"key": str(n)}))
        for n in range(3, 6):
            peer.send(note("_go", {"key": str(n)}))
        answers = {(await log.next())["id"] for _ in range(3)}
        assert answers == {3, 4, 5}
    assert agent.most == 1


async def test_a_batch_entry_handed_to_a_worker_starts_before_a_later_request(
    anyio_backend: str,
) -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send([call(1, "_in_batch")])  # a batch's requests run on workers
        peer.send(call(2, "_after_batch"))
        answers = [await log.next() for _ in range(2)]
    # The batch is answered as a batch (a list), the other request alone.
    ids = {
        entry["id"]
        for answer in answers
        for entry in (answer if type(answer) is list else [answer])
    }
    assert ids == {1, 2}
    started = [name for name, _ in agent.tasks]
    assert sorted(started) == ["_after_batch", "_in_batch"]
    if anyio_backend == "asyncio":  # trio starts new tasks in any order
        assert started == ["_in_batch", "_after_batch"]
