"""The spare reader (docs/semantics.md §2.4, eager start).

When a class-API request detaches, the loop reads on in another task. A task
whose own detached request has finished parks as the connection's spare
reader and takes up the reading at the next detach: it then reads in the
loop's context, never in the finished request's, and the requests that
detach from it are cancelled by the peer as any other.
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.rpc.wire import facing_raw_peer
from tests.support import TIMEOUT, RawPeer

pytestmark = pytest.mark.anyio

tag: contextvars.ContextVar[str | None] = contextvars.ContextVar("spare_reader_tag", default=None)


def call(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def note(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


class Recorder(acp.BaseAgent):
    """Records the task and the context variable each message saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str | None]] = []
        self.releases: dict[str, anyio.Event] = {}

    def record(self, name: str) -> None:
        self.seen.append((name, anyio.get_current_task().id, tag.get()))

    async def ext_method(self, method: str, params: Any) -> Any:
        self.record(method)
        if method == "_wait":  # sets the variable, then suspends until released
            tag.set(params["key"])
            await self.releases.setdefault(params["key"], anyio.Event()).wait()
            self.record("_wait done")
            return {"tag": tag.get()}
        if method == "_forever":
            await anyio.sleep_forever()
        return {"tag": tag.get()}

    async def ext_notification(self, method: str, params: Any) -> None:
        self.record(method)
        if method == "_release":
            self.releases.setdefault(params["key"], anyio.Event()).set()

    def task_of(self, name: str) -> int:
        return next(task for seen, task, _ in self.seen if seen == name)


async def test_the_task_of_a_finished_detached_request_reads_in_the_loops_context() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_wait", {"key": "a"}))  # detaches from the first reader
        peer.send(note("_release", {"key": "a"}))
        assert await log.next() == {"jsonrpc": "2.0", "id": 1, "result": {"tag": "a"}}
        # Request 1's task is parked now; the next request that detaches
        # hands it the reading.
        peer.send(call(2, "_wait", {"key": "b"}))
        peer.send(call(3, "_look"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 3, "result": {"tag": None}}
        peer.send(note("_release", {"key": "b"}))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"tag": "b"}}
    assert agent.task_of("_look") == agent.task_of("_wait done")  # request 1's task
    assert agent.task_of("_look") != agent.task_of("_release")  # read by another
    # Each request finished in the task it started in, and saw only its own tag.
    waits = [(task, seen_tag) for name, task, seen_tag in agent.seen if name == "_wait done"]
    assert [seen_tag for _, seen_tag in waits] == ["a", "b"]
    assert waits[0][0] != waits[1][0]


async def test_requests_detaching_from_a_reused_reader_are_cancelled_by_the_peer() -> None:
    agent = Recorder()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        for n in range(1, 6):  # each reader is the task of the request before
            peer.send(call(n, "_forever"))
            peer.send(note("$/cancel_request", {"requestId": n}))
            answer = await log.next()
            assert answer["id"] == n and answer["error"]["code"] == -32800
        peer.send(call(9, "_look"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 9, "result": {"tag": None}}
    tasks = {task for name, task, _ in agent.seen if name == "_forever"}
    assert len(tasks) >= 2  # the reading moved between tasks


class Asking(acp.BaseClient):
    async def request_permission(self, request: Any) -> Any:
        await anyio.sleep_forever()


async def test_a_client_answers_each_cancelled_permission_request_once() -> None:
    ours, theirs = memory_pair()
    params = {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "call-1"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
    }
    async with RawPeer(theirs) as agent, acp.connect_to_agent(Asking(), ours):
        with anyio.fail_after(TIMEOUT):
            for n in range(1, 6):
                agent.send(call(n, "session/request_permission", params))
                agent.send(note("$/cancel_request", {"requestId": n}))
                answer = await agent.receive()
                assert answer == {
                    "jsonrpc": "2.0",
                    "id": n,
                    "result": {"outcome": {"outcome": "cancelled"}},
                }
