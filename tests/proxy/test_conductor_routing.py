"""The conductor's routing and translation (docs/semantics.md §5.7), on the wire.

A conductor runs one proxy and an agent, both raw peers played by the test,
and serves a raw client. Every test checks the exact lines each endpoint
reads: the direction, the wrapping, the hop's own id, and that raw
``$/cancel_request`` notifications are dropped in both directions while each
endpoint gets exactly one cancel with its own id.

"Nothing else arrived" is checked with barriers: a request that crosses the
same connections afterwards must be the next line (output is FIFO, routing
is sequential).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest

import acp_fast as acp
from acp_fast.conductor import Conductor
from acp_fast.testing import memory_pair
from tests.proxy.chain import (
    CANCELLED,
    ENVELOPE,
    cancel,
    error,
    notification,
    request,
    result,
    wrapped,
)
from tests.support import SIMPLE, RawPeer

pytestmark = pytest.mark.anyio


@dataclass
class Chain:
    client: RawPeer
    proxy: RawPeer
    agent: RawPeer


@asynccontextmanager
async def raw_chain() -> AsyncIterator[Chain]:
    """client (raw) → conductor → proxy (raw) → agent (raw)."""
    proxy_ours, proxy_theirs = memory_pair()
    agent_ours, agent_theirs = memory_pair()
    client_ours, client_theirs = memory_pair()
    conductor = Conductor(proxies=[proxy_ours], agent=agent_ours)
    async with (
        RawPeer(proxy_theirs) as proxy,
        RawPeer(agent_theirs) as agent,
        anyio.create_task_group() as group,
    ):
        group.start_soon(conductor.serve, client_ours)
        async with RawPeer(client_theirs) as client:
            yield Chain(client, proxy, agent)
            await client.close_output()
            # The conductor ends: its components' input ends, then its output.
            await agent.receive_eof()
            await proxy.receive_eof()
            await client.receive_eof()


async def client_to_agent_barrier(chain: Chain, label: str = "barrier") -> None:
    """A request crosses client → proxy → agent and back; nothing else arrives."""
    chain.client.send(request(f"{label}-c", SIMPLE, {"message": label}))
    at_proxy = await chain.proxy.receive()
    assert at_proxy["method"] == SIMPLE, at_proxy
    chain.proxy.send(request(f"{label}-p", ENVELOPE, wrapped(SIMPLE, {"message": label})))
    at_agent = await chain.agent.receive()
    assert at_agent["method"] == SIMPLE, at_agent
    chain.agent.send(result(at_agent["id"], label))
    assert await chain.proxy.receive() == result(f"{label}-p", label)
    chain.proxy.send(result(at_proxy["id"], label))
    assert await chain.client.receive() == result(f"{label}-c", label)


async def agent_to_client_barrier(chain: Chain, label: str = "back") -> None:
    """A request crosses agent → proxy → client and back; nothing else arrives."""
    chain.agent.send(request(f"{label}-a", SIMPLE, {"message": label}))
    at_proxy = await chain.proxy.receive()
    assert at_proxy["method"] == ENVELOPE, at_proxy
    chain.proxy.send(request(f"{label}-p", SIMPLE, {"message": label}))
    at_client = await chain.client.receive()
    assert at_client["method"] == SIMPLE, at_client
    chain.client.send(result(at_client["id"], label))
    assert await chain.proxy.receive() == result(f"{label}-p", label)
    chain.proxy.send(result(at_proxy["id"], label))
    assert await chain.agent.receive() == result(f"{label}-a", label)


async def test_initialize_is_rewritten_for_a_proxy_and_cancellable():
    params = {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}}
    async with raw_chain() as chain:
        chain.client.send(request(1, "initialize", params))
        at_proxy = await chain.proxy.receive()
        assert at_proxy["method"] == "_proxy/initialize" and at_proxy["params"] == params
        assert at_proxy["id"] != 1
        chain.client.send(cancel(1))
        assert await chain.proxy.receive() == cancel(at_proxy["id"])
        chain.proxy.send(error(at_proxy["id"], CANCELLED))
        assert await chain.client.receive() == error(1, CANCELLED)

        chain.client.send(request(2, "initialize", params))
        at_proxy = await chain.proxy.receive()
        chain.proxy.send(result(at_proxy["id"], {"protocolVersion": 1}))
        assert await chain.client.receive() == result(2, {"protocolVersion": 1})
        await client_to_agent_barrier(chain)


async def test_proxy_initialize_from_the_client_is_refused():
    async with raw_chain() as chain:
        chain.client.send(request(1, "_proxy/initialize", {"protocolVersion": 1}))
        answer = await chain.client.receive()
        assert answer["id"] == 1 and answer["error"]["code"] == -32600
        await client_to_agent_barrier(chain)


async def test_left_to_right_each_hop_has_its_own_id_and_its_own_cancel():
    async with raw_chain() as chain:
        chain.client.send(request("c1", "session/prompt", {"sessionId": "s", "prompt": []}))
        p1 = await chain.proxy.receive()
        assert p1["method"] == "session/prompt" and p1["id"] != "c1"
        chain.proxy.send(request("p2", ENVELOPE, wrapped("session/prompt", p1["params"])))
        a1 = await chain.agent.receive()
        assert a1["method"] == "session/prompt" and a1["params"] == p1["params"]
        assert a1["id"] not in ("c1", "p2", p1["id"])

        chain.client.send(cancel("c1"))
        assert await chain.proxy.receive() == cancel(p1["id"])
        chain.proxy.send(notification(ENVELOPE, wrapped("$/cancel_request", {"requestId": "p2"})))
        assert await chain.agent.receive() == cancel(a1["id"])

        chain.agent.send(error(a1["id"], CANCELLED))
        assert await chain.proxy.receive() == error("p2", CANCELLED)
        chain.proxy.send(error(p1["id"], CANCELLED))
        assert await chain.client.receive() == error("c1", CANCELLED)
        await client_to_agent_barrier(chain)


async def test_right_to_left_requests_are_wrapped_into_a_proxy_and_so_is_their_cancel():
    async with raw_chain() as chain:
        ask = {"sessionId": "s", "toolCall": {"toolCallId": "t"}, "options": []}
        chain.agent.send(request("a1", "session/request_permission", ask))
        q1 = await chain.proxy.receive()
        assert q1["method"] == ENVELOPE
        assert q1["params"] == wrapped("session/request_permission", ask)
        chain.proxy.send(request("p1", "session/request_permission", ask))
        c1 = await chain.client.receive()
        assert c1["method"] == "session/request_permission" and c1["id"] != "p1"

        chain.agent.send(cancel("a1"))
        # The cancel of a wrapped request is wrapped, with the outer id.
        assert await chain.proxy.receive() == notification(
            ENVELOPE, wrapped("$/cancel_request", {"requestId": q1["id"]})
        )
        chain.proxy.send(cancel("p1"))
        assert await chain.client.receive() == cancel(c1["id"])

        chain.client.send(result(c1["id"], {"outcome": {"outcome": "cancelled"}}))
        assert await chain.proxy.receive() == result("p1", {"outcome": {"outcome": "cancelled"}})
        chain.proxy.send(error(q1["id"], CANCELLED))
        assert await chain.agent.receive() == error("a1", CANCELLED)
        await agent_to_client_barrier(chain)


async def test_notifications_travel_one_hop_at_a_time():
    async with raw_chain() as chain:
        chain.client.send(notification("session/cancel", {"sessionId": "s"}))
        assert await chain.proxy.receive() == notification("session/cancel", {"sessionId": "s"})
        chain.proxy.send(notification(ENVELOPE, wrapped("session/cancel", {"sessionId": "s"})))
        assert await chain.agent.receive() == notification("session/cancel", {"sessionId": "s"})

        update = {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}}
        chain.agent.send(notification("session/update", update))
        assert await chain.proxy.receive() == notification(
            ENVELOPE, wrapped("session/update", update)
        )
        chain.proxy.send(notification("session/update", update))
        assert await chain.client.receive() == notification("session/update", update)


async def test_raw_cancel_requests_are_dropped_in_both_directions():
    async with raw_chain() as chain:
        # Unknown ids everywhere: nothing to translate, and nothing tunnelled.
        chain.client.send(cancel("nobody"))
        chain.proxy.send(notification(ENVELOPE, wrapped("$/cancel_request", {"requestId": 3})))
        await client_to_agent_barrier(chain)
        chain.agent.send(cancel("nobody"))
        chain.proxy.send(cancel(4))
        await agent_to_client_barrier(chain)


async def test_a_component_that_ends_ends_the_conductor():
    proxy_ours, proxy_theirs = memory_pair()
    agent_ours, agent_theirs = memory_pair()
    client_ours, client_theirs = memory_pair()
    conductor = Conductor(proxies=[proxy_ours], agent=agent_ours)
    failures: list[acp.Error] = []

    async def serve() -> None:
        try:
            await conductor.serve(client_ours)
        except acp.Error as exc:
            failures.append(exc)

    async with (
        RawPeer(proxy_theirs) as proxy,
        RawPeer(agent_theirs) as agent,
        RawPeer(client_theirs) as client,
    ):
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            client.send(request("c1", SIMPLE, {"message": "pending"}))
            p1 = await proxy.receive()
            proxy.send(request("p2", ENVELOPE, wrapped(SIMPLE, {"message": "pending"})))
            await agent.receive()
            await agent.close_output()  # the agent goes away
            # The request pending there fails back to the proxy, the proxy's
            # link closes, which fails the client's request, and only then
            # does the client's connection end.
            at_proxy = await proxy.receive()
            assert at_proxy["id"] == "p2" and at_proxy["error"]["code"] == -32603
            await proxy.receive_eof()
            answer = await client.receive()
            assert answer["id"] == "c1" and answer["error"]["code"] == -32603
            assert p1["id"] != "c1"
            await client.receive_eof()
    [failure] = failures
    assert failure.data == "agent ended its connection"


async def test_closing_the_client_answers_its_pending_requests_first():
    async with raw_chain() as chain:
        chain.client.send(request("c1", SIMPLE, {"message": "never answered"}))
        await chain.proxy.receive()
        await chain.client.close_output()
        # The proxy's link closes first, which fails the request pending
        # there; that answer reaches the client before its connection ends.
        answer = await chain.client.receive()
        assert answer["id"] == "c1" and answer["error"]["code"] == -32603


async def test_a_component_that_cannot_start_fails_serve():
    conductor = Conductor(agent=["/nonexistent/acp-agent"])
    _, client_theirs = memory_pair()
    with pytest.raises(FileNotFoundError):
        await conductor.serve(client_theirs)


def test_a_component_command_is_an_argv_list():
    with pytest.raises(TypeError, match="argv list"):
        Conductor(agent="acp-fast example-agent")
    with pytest.raises(TypeError):
        Conductor(agent=[])
