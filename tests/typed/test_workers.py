"""Class-API requests run on reused workers (docs/semantics.md §2.4).

A worker runs one request after another under one cancel scope, entering a
fresh one only after the peer cancelled a request. These check that a
cancellation never leaks from one request to the next one on the same
worker, and that a request cancelled while queued never runs.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from tests.rpc.wire import facing_raw_peer

pytestmark = pytest.mark.anyio


class OneWorker(acp.BaseAgent):
    max_concurrent_requests = 1

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.started = anyio.Event()

    async def ext_method(self, method: str, params: Any) -> Any:
        self.ran.append(method)
        if method == "_stubborn":  # returns a value although cancelled
            self.started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                return {"partial": True}
        if method == "_parked":
            self.started.set()
            await anyio.sleep_forever()
        # A real suspension: a cancel leaked from the request before would stop it.
        await anyio.lowlevel.checkpoint()
        return {"done": method}


def call(request_id: Any, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}


def cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}


async def test_a_request_that_outlives_its_cancel_does_not_cancel_the_next_on_its_worker():
    agent = OneWorker()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_stubborn"))
        await agent.started.wait()
        peer.send(call(2, "_next"))  # queued behind it on the one worker
        peer.send(cancel(1))
        first, second = await log.next(), await log.next()
        assert first == {"jsonrpc": "2.0", "id": 1, "result": {"partial": True}}
        assert second == {"jsonrpc": "2.0", "id": 2, "result": {"done": "_next"}}


async def test_after_a_cancelled_request_its_worker_runs_the_next_normally():
    agent = OneWorker()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_parked"))
        await agent.started.wait()
        peer.send(call(2, "_next"))
        peer.send(cancel(1))
        first, second = await log.next(), await log.next()
        assert first["id"] == 1 and first["error"]["code"] == -32800
        assert second == {"jsonrpc": "2.0", "id": 2, "result": {"done": "_next"}}
        peer.send(call(3, "_again"))  # the worker was parked, then handed this
        assert await log.next() == {"jsonrpc": "2.0", "id": 3, "result": {"done": "_again"}}


async def test_a_queued_request_cancelled_before_it_starts_never_runs():
    agent = OneWorker()
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send(call(1, "_parked"))
        await agent.started.wait()
        peer.send(call(2, "_next"))
        peer.send(cancel(2))
        answer = await log.next()
        assert answer["id"] == 2 and answer["error"]["code"] == -32800
        peer.send(cancel(1))
        assert (await log.next())["id"] == 1
        assert agent.ran == ["_parked"]


async def test_a_prompt_queued_behind_another_session_is_stopped_by_session_cancel():
    class Prompts(acp.BaseAgent):
        max_concurrent_requests = 1
        ran: list[str] = []

        async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id=f"s{len(self.ran)}")

        async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
            self.ran.append(request.session_id)
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    agent = Prompts()
    prompt = {"prompt": [{"type": "text", "text": "x"}]}
    async with facing_raw_peer(acp.agent_builder(agent)) as (cx, peer, log):
        peer.send({**call(1, "session/prompt"), "params": {"sessionId": "a", **prompt}})
        peer.send({**call(2, "session/prompt"), "params": {"sessionId": "b", **prompt}})
        peer.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "b"}})
        assert await log.next() == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"stopReason": "cancelled"},
        }
        peer.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "a"}})
        assert await log.next() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"stopReason": "cancelled"},
        }
        assert agent.ran == ["a"]


async def test_a_client_whose_workers_all_wait_still_reads_the_agents_cancels():
    class Waits(acp.BaseClient):
        async def request_permission(
            self, request: v1.RequestPermissionRequest
        ) -> v1.RequestPermissionResponse:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

    builder, _ = acp.client_builder(Waits())
    params = {
        "sessionId": "s",
        "toolCall": {"toolCallId": "t"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
    }
    async with facing_raw_peer(builder) as (cx, peer, log):
        for n in range(65):  # one more than the workers
            peer.send({**call(n, "session/request_permission"), "params": params})
        for n in reversed(range(65)):
            peer.send(cancel(n))
        answers = [await log.next() for _ in range(65)]
        assert sorted(a["id"] for a in answers) == list(range(65))
        assert {a["result"]["outcome"]["outcome"] for a in answers} == {"cancelled"}


# A CancelledError nobody asked for is an asyncio matter: trio has no such thing.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_method_raising_a_stray_cancelled_error_is_answered_and_keeps_its_worker(
    anyio_backend: str,
) -> None:
    import asyncio

    class Stray(acp.BaseAgent):
        max_concurrent_requests = 1

        async def ext_method(self, method: str, params: Any) -> Any:
            if method == "_stray":
                inner = asyncio.ensure_future(asyncio.sleep(10))
                inner.cancel()
                await inner  # raises CancelledError, though this task was not cancelled
            return {"ok": method}

    async with facing_raw_peer(acp.agent_builder(Stray())) as (cx, peer, log):
        peer.send(call(1, "_stray"))
        first = await log.next()
        assert first["id"] == 1 and first["error"]["code"] == -32603
        peer.send(call(2, "_after"))
        assert await log.next() == {"jsonrpc": "2.0", "id": 2, "result": {"ok": "_after"}}
