"""The Proxy role's default forwarding (docs/semantics.md §5.6), on the wire.

A bare ``acp.Proxy.builder()`` faces a raw peer that plays its conductor:
plain messages come from (and go to) the proxy's client side, and
``_proxy/successor`` envelopes from (and to) its agent side. The tests check
the exact lines: which side a message goes to, under which id, and that a raw
``$/cancel_request`` is dropped while its translation goes out once.

"Nothing else was sent" is checked with a barrier: the peer sends a request
from the client side, which the proxy forwards to the agent side; the next
line the peer reads must be that request (output is FIFO).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.proxy.chain import (
    CANCELLED,
    ENVELOPE,
    cancel,
    error,
    notification,
    park,
    request,
    result,
    wrapped,
)
from tests.support import SIMPLE, TIMEOUT, RawPeer, serving

pytestmark = pytest.mark.anyio


async def barrier(peer: RawPeer, label: str = "barrier") -> None:
    """Nothing else is on its way from the proxy (see the module docstring)."""
    peer.send(request(f"{label}-id", SIMPLE, {"message": label}))
    forwarded = await peer.receive()
    assert forwarded["method"] == ENVELOPE, forwarded
    assert forwarded["params"] == wrapped(SIMPLE, {"message": label})
    peer.send(result(forwarded["id"], {"result": label}))
    assert await peer.receive() == result(f"{label}-id", {"result": label})


@asynccontextmanager
async def pass_through(builder: acp.Builder[Any] | None = None) -> AsyncIterator[RawPeer]:
    async with serving(builder or acp.Proxy.builder().name("proxy")) as peer:
        yield peer


async def test_initialize_from_the_client_side_is_refused():
    async with pass_through() as peer:
        peer.send(request(1, "initialize", {"protocolVersion": 1}))
        answer = await peer.receive()
        assert answer["id"] == 1
        assert answer["error"]["code"] == -32600
        assert answer["error"]["data"] == "proxies must be initialized with `_proxy/initialize`"
        await barrier(peer)


async def test_proxy_initialize_goes_on_as_initialize_and_its_answer_comes_back():
    params = {"protocolVersion": 1, "clientCapabilities": {"x-new": [1, 2]}}
    async with pass_through() as peer:
        peer.send(request("init", "_proxy/initialize", params))
        forwarded = await peer.receive()
        assert forwarded["method"] == ENVELOPE
        assert forwarded["params"] == wrapped("initialize", params)
        assert forwarded["id"] != "init"
        peer.send(result(forwarded["id"], {"protocolVersion": 1, "extra": True}))
        assert await peer.receive() == result("init", {"protocolVersion": 1, "extra": True})


async def test_proxy_initialize_is_cancellable():
    async with pass_through() as peer:
        peer.send(request("init", "_proxy/initialize", {"protocolVersion": 1}))
        forwarded = await peer.receive()
        peer.send(cancel("init"))
        assert await peer.receive() == notification(
            ENVELOPE, wrapped("$/cancel_request", {"requestId": forwarded["id"]})
        )
        peer.send(error(forwarded["id"], CANCELLED))
        assert await peer.receive() == error("init", CANCELLED)
        await barrier(peer)


async def test_session_new_is_forwarded_cancellable_and_routes_its_session_back():
    async with pass_through() as peer:
        # A cancelled session/new: one wrapped cancel with the new id, the
        # agent's -32800 relayed, and no session left behind.
        peer.send(request("s1", "session/new", {"cwd": "/park", "mcpServers": []}))
        first = await peer.receive()
        assert first["params"] == wrapped("session/new", {"cwd": "/park", "mcpServers": []})
        peer.send(cancel("s1"))
        assert await peer.receive() == notification(
            ENVELOPE, wrapped("$/cancel_request", {"requestId": first["id"]})
        )
        peer.send(error(first["id"], CANCELLED))
        assert await peer.receive() == error("s1", CANCELLED)

        peer.send(request("s2", "session/new", {"cwd": "/", "mcpServers": []}))
        second = await peer.receive()
        peer.send(result(second["id"], {"sessionId": "sess-1", "extra": 1}))
        assert await peer.receive() == result("s2", {"sessionId": "sess-1", "extra": 1})

        # The session's messages from the agent side reach the client side.
        update = {"sessionId": "sess-1", "update": {"sessionUpdate": "plan", "entries": []}}
        peer.send(notification(ENVELOPE, wrapped("session/update", update)))
        assert await peer.receive() == notification("session/update", update)
        ask = {"sessionId": "sess-1", "toolCall": {"toolCallId": "t"}, "options": []}
        peer.send(request("ask", ENVELOPE, wrapped("session/request_permission", ask)))
        asked = await peer.receive()
        assert asked["method"] == "session/request_permission" and asked["params"] == ask
        peer.send(result(asked["id"], {"outcome": {"outcome": "cancelled"}}))
        assert await peer.receive() == result("ask", {"outcome": {"outcome": "cancelled"}})
        await barrier(peer)


async def test_other_messages_from_the_client_side_go_to_the_agent_side():
    async with pass_through() as peer:
        peer.send(notification("session/cancel", {"sessionId": "s"}))
        assert await peer.receive() == notification(
            ENVELOPE, wrapped("session/cancel", {"sessionId": "s"})
        )
        peer.send(request(7, "_vendor/ext"))  # no params: none forwarded
        forwarded = await peer.receive()
        assert forwarded["method"] == ENVELOPE and forwarded["params"] == wrapped("_vendor/ext")
        assert forwarded["id"] != 7
        peer.send(error(forwarded["id"], {"code": -32601, "message": "Method not found"}))
        assert await peer.receive() == error(7, {"code": -32601, "message": "Method not found"})


async def test_messages_from_the_agent_side_go_to_the_client_side_unwrapped():
    async with pass_through() as peer:
        peer.send(notification(ENVELOPE, wrapped("_vendor/note", {"n": 1})))
        assert await peer.receive() == notification("_vendor/note", {"n": 1})
        peer.send(request("a-1", ENVELOPE, wrapped("fs/read_text_file", {"path": "/x"})))
        forwarded = await peer.receive()
        assert forwarded["method"] == "fs/read_text_file" and "id" in forwarded
        assert forwarded["id"] != "a-1"
        # The agent side cancels: one plain cancel with the client-side id,
        # the wrapped raw one is not passed on.
        peer.send(notification(ENVELOPE, wrapped("$/cancel_request", {"requestId": "a-1"})))
        assert await peer.receive() == cancel(forwarded["id"])
        peer.send(error(forwarded["id"], CANCELLED))
        assert await peer.receive() == error("a-1", CANCELLED)  # plain, the outer id
        await barrier(peer)


async def test_an_envelope_in_an_envelope_loses_one_layer_per_hop():
    async with pass_through() as peer:
        peer.send(notification(ENVELOPE, wrapped(ENVELOPE, wrapped("_vendor/note", {"n": 2}))))
        assert await peer.receive() == notification(ENVELOPE, wrapped("_vendor/note", {"n": 2}))
        await barrier(peer)


@pytest.mark.parametrize("wrapping", [0, 1, 2])
async def test_raw_cancel_requests_are_dropped(wrapping: int):
    async with pass_through() as peer:
        for request_id in ("unknown", 12):
            message = cancel(request_id)
            for _ in range(wrapping):
                message = notification(ENVELOPE, wrapped(message["method"], message["params"]))
            peer.send(message)
        await barrier(peer)


@pytest.mark.parametrize("depth", [1, 2, 3])
async def test_nested_envelopes_are_peeled_for_the_cancellation_registry(depth: int):
    parked: list[Any] = []
    proxy = acp.Proxy.builder()

    @proxy.on_receive_request(SIMPLE, peer=acp.Agent)
    async def hold(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        parked.append(responder.id)
        park(responder, cx)

    async with pass_through(proxy) as peer:
        peer.send(request("held", ENVELOPE, wrapped(SIMPLE, {"message": "park"})))
        message = cancel("held")
        for _ in range(depth):
            message = notification(ENVELOPE, wrapped(message["method"], message["params"]))
        peer.send(message)
        # The request is answered -32800 (plain, with the outer id), and the
        # cancel itself went nowhere: the answer is the next line.
        assert await peer.receive() == error("held", CANCELLED)
        assert parked == ["held"]
        await barrier(peer)


async def test_a_malformed_envelope_is_an_ordinary_notification():
    seen: list[Any] = []
    proxy = acp.Proxy.builder()

    @proxy.on_receive_request(SIMPLE, peer=acp.Client)
    async def hold(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        park(responder, cx)

    @proxy.on_receive_notification(ENVELOPE)
    async def observe(message: acp.UntypedMessage, cx: Any) -> Any:
        seen.append(message.params)
        return acp.NOT_HANDLED

    async with pass_through(proxy) as peer:
        peer.send(request("held", SIMPLE, {"message": "park"}))
        bad = {"params": {"requestId": "held"}, "method": 5}  # no string method
        peer.send(notification(ENVELOPE, bad))
        peer.send(request("bad-request", ENVELOPE, {"params": {}}))
        answer = await peer.receive()
        # Not a cancel (the held request goes on), not forwarded, not claimed
        # by the default: the envelope request has nobody to answer it.
        assert answer["id"] == "bad-request" and answer["error"]["code"] == -32601
        assert seen == [bad]
        peer.send(cancel("held"))
        assert await peer.receive() == error("held", CANCELLED)


async def test_handlers_run_before_the_default_and_can_hand_back():
    proxy = acp.Proxy.builder()
    seen: list[str] = []

    @proxy.on_receive_request(peer=acp.Client)
    async def look(message: acp.UntypedMessage, responder: Any, cx: Any) -> Any:
        seen.append(message.method)
        if message.method == "_vendor/local":
            responder.respond({"answered": "by the proxy"})
            return None
        return acp.NOT_HANDLED

    async with pass_through(proxy) as peer:
        peer.send(request(1, "_vendor/local"))
        assert await peer.receive() == result(1, {"answered": "by the proxy"})
        await barrier(peer)
        assert seen == ["_vendor/local", SIMPLE]


async def test_a_pass_through_proxy_answers_everything_once_even_at_eof():
    async with pass_through() as peer:
        peer.send(request("pending", SIMPLE, {"message": "x"}))
        forwarded = await peer.receive()
        assert forwarded["method"] == ENVELOPE
        await peer.close_output()
        # Its own request fails with the EOF; the upstream request is
        # answered with that failure rather than left hanging.
        with anyio.fail_after(TIMEOUT):
            answer = await peer.receive()
        assert answer["id"] == "pending" and answer["error"]["code"] == -32603
