"""``cx.pending_requests``: the in-flight counts, read-only."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.rpc.wire import barrier_from_peer, facing_raw_peer, respond
from tests.support import SIMPLE, TIMEOUT, echo

pytestmark = pytest.mark.anyio


async def test_pending_requests_counts_both_directions():
    release = anyio.Event()

    async def slow(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        async def later() -> None:
            await release.wait()
            responder.respond({})

        cx.spawn(later)

    builder = (
        acp.UntypedRole.builder().on_receive_request(echo, SIMPLE).on_receive_request(slow, "slow")
    )
    async with facing_raw_peer(builder) as (cx, peer, log):
        assert cx.pending_requests == (0, 0)
        sent = cx.send_request(acp.UntypedMessage("m", {}))
        request = await log.next()
        peer.send({"jsonrpc": "2.0", "id": "in-1", "method": "slow", "params": {}})
        await barrier_from_peer(log)
        pending = cx.pending_requests
        assert (pending.outgoing, pending.incoming) == (1, 1)
        with pytest.raises(AttributeError):
            pending.outgoing = 5  # type: ignore[misc]
        respond(peer, request["id"], {"ok": True})
        with anyio.fail_after(TIMEOUT):
            assert await sent == {"ok": True}
        assert cx.pending_requests.outgoing == 0
        release.set()
        with anyio.fail_after(TIMEOUT):
            assert (await log.next())["id"] == "in-1"
        assert cx.pending_requests == (0, 0)
