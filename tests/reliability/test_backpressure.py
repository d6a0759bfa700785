"""Backpressure: a slow handler paces the reader, and through it the sender.

The official Python SDK ran every incoming message in a task of its own:
20,000 notifications to a slow client became 18,360 concurrent handler
tasks and +128 MiB (python-sdk-anchor §4). Here handlers run in the
dispatch loop one at a time (docs/semantics.md §2.4), so a handler that has not
returned stops the reading; the transport fills up; a sender that paces
itself with ``await cx.drain()`` (as the typed helpers do) then waits. What
is held anywhere is bounded by the pipe's capacity, the sender's high-water
mark and one read, whatever the number of messages.
"""

from __future__ import annotations

import fcntl
import os
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast._async.connection import HIGH_WATER
from acp_fast._io.channel import LARGE_READ_SIZE
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio

MESSAGES = 20_000
PAYLOAD = "u" * 200
F_GETPIPE_SZ = 1032  # Linux fcntl


def pipe_pair() -> tuple[acp.Transport, acp.Transport, int]:
    """Two transports over two OS pipes, and the capacity of one pipe."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    capacity = fcntl.fcntl(a_write, F_GETPIPE_SZ)
    return (
        acp.FdTransport(a_read, a_write, close=True),
        acp.FdTransport(b_read, b_write, close=True),
        capacity,
    )


class SlowReceiver:
    """A notification handler that holds the first message until released."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.active = 0
        self.max_active = 0
        self.handled = 0
        self.done = anyio.Event()

    async def on_update(self, message: acp.UntypedMessage, cx: Any) -> None:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await self.release.wait()
        finally:
            self.active -= 1
        self.handled += 1
        if self.handled == MESSAGES:
            self.done.set()


@pytest.mark.parametrize("transport", ["memory", "pipes"])
async def test_a_slow_handler_paces_a_draining_sender(transport):
    if transport == "memory":
        capacity = 64 * 1024
        server_end, client_end = memory_pair(capacity=capacity)
    else:
        server_end, client_end, capacity = pipe_pair()
    receiver = SlowReceiver()
    server = (
        acp.UntypedRole.builder().name("slow").on_receive_notification(receiver.on_update, "update")
    )
    line_size = len(b'{"jsonrpc":"2.0","method":"update","params":{"n":00000,"text":""}}\n') + len(
        PAYLOAD
    )
    # What may be in flight while the handler holds message 0: the sender's
    # high-water mark and one message over it, the pipe, and one read of the
    # receiver (at most its large read size).
    bound = (HIGH_WATER + line_size + capacity + LARGE_READ_SIZE) // line_size + 1
    sent = 0
    max_held = 0

    async def send_all(cx: Any) -> None:
        nonlocal sent, max_held
        for n in range(MESSAGES):
            cx.send_notification(acp.UntypedMessage("update", {"n": n, "text": PAYLOAD}))
            sent += 1
            max_held = max(max_held, cx._out_size + cx._channel.pending)
            await cx.drain()

    async with anyio.create_task_group() as group:
        group.start_soon(server.connect_to, server_end)
        async with acp.UntypedRole.builder().name("fast").connect(client_end) as cx:
            group.start_soon(send_all, cx)
            with anyio.fail_after(TIMEOUT):
                # The sender runs until the transport is full and its own
                # output passes the high-water mark: then drain() parks it
                # (until everything held is written). Parked: no progress
                # while everything else runs a good while.
                before = -1
                while sent != before or receiver.active == 0:
                    before = sent
                    for _ in range(50):
                        await anyio.lowlevel.checkpoint()
            stuck_at, tasks = sent, len(anyio.get_running_tasks())
            for _ in range(200):  # it stays parked: its output no longer grows
                await anyio.lowlevel.checkpoint()
            assert sent == stuck_at
            assert receiver.handled == 0 and receiver.active == 1
            assert stuck_at <= bound, (stuck_at, bound)
            # No pile of tasks either: the two connections' own few, steady.
            assert len(anyio.get_running_tasks()) == tasks < 16
            receiver.release.set()
            with anyio.fail_after(TIMEOUT * 4):
                await receiver.done.wait()
        group.cancel_scope.cancel()
    assert sent == MESSAGES
    assert receiver.max_active == 1
    assert max_held <= HIGH_WATER + capacity + 2 * line_size, max_held


async def test_a_slow_request_handler_stops_reading_until_it_returns():
    """Requests too: while a handler runs, the next line is not even read."""
    read_while_busy: list[int] = []
    release = anyio.Event()
    seen: list[int] = []

    async def slow(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        n = message.params["n"]
        seen.append(n)
        if n == 0:
            await release.wait()
            read_while_busy.append(len(seen))
        responder.respond(n)

    server = acp.UntypedRole.builder().on_receive_request(slow, "slow")
    ours, theirs = memory_pair(capacity=16 * 1024)
    async with anyio.create_task_group() as group:
        group.start_soon(server.connect_to, ours)
        async with acp.UntypedRole.builder().connect(theirs) as cx:
            requests = [cx.send_request(acp.UntypedMessage("slow", {"n": n})) for n in range(1000)]
            with anyio.fail_after(TIMEOUT):
                while not seen:
                    await anyio.lowlevel.checkpoint()
                for _ in range(100):
                    await anyio.lowlevel.checkpoint()
            assert seen == [0]
            release.set()
            with anyio.fail_after(TIMEOUT):
                assert [await r for r in requests] == list(range(1000))
        group.cancel_scope.cancel()
    assert read_while_busy == [1]
