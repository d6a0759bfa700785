"""Observers: every message in and out, and the life of each request
(docs/tracing.md), over a real subprocess."""

from __future__ import annotations

import sys

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1

from .helpers import PROCESS_TIMEOUT, Recording, agent_command

pytestmark = pytest.mark.anyio


def prompt(text: str) -> v1.PromptRequest:
    return v1.PromptRequest(session_id="chain-session", prompt=[v1.ContentBlockText(text=text)])


async def test_observer_sees_every_message_and_each_request_lifecycle(anyio_backend: str):
    seen = Recording()
    agent = acp.Subprocess(agent_command(anyio_backend))
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().observe(seen).connect(agent) as cx:
            await cx.send_request(v1.InitializeRequest(protocol_version=1))
            done = cx.send_request(prompt("hello"))
            prompt_id = done.id
            await done
            parked = cx.send_request(prompt("park"))
            parked.cancel()
            with pytest.raises(acp.Error):
                await parked
            report = await cx.send_request(acp.UntypedMessage("test/report", {}))
    assert seen.closed

    sent = seen.decoded("out")
    received = seen.decoded("in")
    methods = [message.get("method") for message in sent]
    assert methods == [
        "initialize",
        "session/prompt",
        "session/prompt",
        "$/cancel_request",
        "test/report",
    ]
    assert sent[3]["params"] == {"requestId": parked.id}
    # Every answer and the streamed update arrived, raw.
    answered_ids = [message["id"] for message in received if "id" in message]
    assert sorted(answered_ids) == sorted(message["id"] for message in sent if "id" in message)
    assert any(message.get("method") == "session/update" for message in received)
    assert all(not data.endswith(b"\n") for d, data in seen.messages if d == "in")
    assert report["cancels"] == report["parked"]

    initialize_id = sent[0]["id"]
    assert seen.lifecycle == [
        ("sent", initialize_id, "initialize"),
        ("answered", initialize_id, "initialize"),
        ("sent", prompt_id, "session/prompt"),
        ("answered", prompt_id, "session/prompt"),
        ("sent", parked.id, "session/prompt"),
        ("cancelled", parked.id, "session/prompt"),
        ("failed", parked.id, "session/prompt", acp.ErrorCode.REQUEST_CANCELLED),
        ("sent", sent[4]["id"], "test/report"),
        ("answered", sent[4]["id"], "test/report"),
    ]


async def test_a_request_pending_at_eof_is_reported_failed(anyio_backend: str):
    seen = Recording()
    # A peer that reads one line and exits without answering.
    agent = acp.Subprocess([sys.executable, "-c", "import sys; sys.stdin.readline()"])
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().observe(seen).connect(agent) as cx:
            parked = cx.send_request(prompt("park"))
            with pytest.raises(acp.Error) as caught:
                await parked
    assert acp.is_incoming_transport_closed(caught.value)
    assert seen.lifecycle[-1][:3] == ("failed", parked.id, "session/prompt")
    assert seen.lifecycle[-1][3] == caught.value.code


async def test_an_observer_that_raises_is_logged_and_the_connection_goes_on(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
):
    class Broken(acp.Observer):
        def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
            raise RuntimeError("observer bug")

    agent = acp.Subprocess(agent_command(anyio_backend))
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().observe(Broken()).connect(agent) as cx:
            answer = await cx.send_request(v1.InitializeRequest(protocol_version=1))
    assert answer.protocol_version == 1
    assert "observer bug" in caplog.text


async def test_oversized_lines_reach_the_observer_as_their_head_and_size(anyio_backend: str):
    seen = Recording()
    sizes: list[int | None] = []

    class Sizes(acp.Observer):
        def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
            if direction == "in":
                sizes.append(oversized)

    agent = acp.Subprocess(agent_command(anyio_backend))
    builder = acp.Client.builder().max_message_size(64).observe(seen).observe(Sizes())
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with builder.connect(agent) as cx:
            with pytest.raises(acp.Error):
                await cx.send_request(acp.UntypedMessage("test/simple", {"message": "x" * 200}))
    assert sizes and sizes[0] is not None and sizes[0] > 200
    direction, head = seen.messages[-1]
    assert direction == "in" and head.startswith(b'{"jsonrpc"') and len(head) < 200
