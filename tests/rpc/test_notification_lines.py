"""The line a typed notification is written as (docs/architecture.md): the
first send of a class takes the general path and learns the class's line
head; later sends of that class, and a class-API agent's session updates,
are formatted from a head. Each must write the bytes the general path
writes."""

from __future__ import annotations

from typing import Any

import pytest

import acp_fast as acp
from acp_fast._async import _wire, connection
from acp_fast._async.messages import method_of, wire_params
from acp_fast.schema import v1
from tests.support import serving

pytestmark = pytest.mark.anyio


def update(text: str) -> v1.SessionNotification:
    return v1.SessionNotification(
        session_id="s-1",
        update=v1.SessionUpdateAgentMessageChunk(content=v1.ContentBlockText(text=text)),
    )


async def test_repeated_typed_notifications_are_written_as_the_general_path_writes_them():
    sent = [
        update("first"),
        update("second"),
        v1.CancelNotification(session_id="s-1"),  # (a client's; any role may send it)
        update("third"),
        v1.CancelNotification(session_id="s-2"),
        acp.UntypedMessage("session/update", {"sessionId": "s-1", "update": {}}),
    ]

    async def go(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        for notification in sent:
            cx.send_notification(notification)
        responder.respond({})

    builder = acp.Agent.builder().on_receive_request(go, "go")
    async with serving(builder) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "go"})
        lines = [await peer.receive_line() for _ in range(len(sent) + 1)]
    expected = [_wire.encode_notification(method_of(n), wire_params(n)) for n in sent]
    lines = [line + b"\n" for line in lines]
    assert lines[: len(sent)] == expected
    assert lines[-1] == b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    # The later sends did take the head path.
    assert v1.SessionNotification in connection._notification_heads


async def test_a_class_api_agent_writes_its_updates_as_send_notification_would():
    updates = [
        v1.SessionUpdateAgentMessageChunk(content=v1.ContentBlockText(text="a")),
        v1.SessionUpdateAgentThoughtChunk(content=v1.ContentBlockText(text='"b"\n')),
    ]

    class Streaming(acp.BaseAgent):
        async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
            for item in updates:
                await self.client.session_update(request.session_id, item)
            return v1.PromptResponse(stop_reason="end_turn")

    async with serving(acp.agent_builder(Streaming())) as peer:
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "session/prompt",
                "params": {"sessionId": "s-9", "prompt": []},
            }
        )
        lines = [await peer.receive_line() + b"\n" for _ in range(len(updates) + 1)]
    expected = [
        _wire.encode_notification(
            "session/update", v1.SessionNotification(session_id="s-9", update=item)
        )
        for item in updates
    ]
    assert lines[: len(updates)] == expected
    assert lines[-1] == b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}\n'
