"""The sans-IO pieces of the remote transports: the SSE reader, session scoping,
and the message channel's framing and pacing (docs/remote.md)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_fast._io.backend import current_backend
from acp_fast._transports.remote.channel import MessageChannel
from acp_fast._transports.remote.streams import Mailbox
from acp_fast._transports.remote.wire import SseParser, id_key, message_session


def test_sse_events_split_anywhere() -> None:
    stream = (
        b': keep-alive\n\ndata: {"a":1}\n\nevent: x\nid: 7\ndata: [1,\ndata: 2]\r\n\r\ndata:{}\n\n'
    )
    for size in (1, 2, 5, len(stream)):
        parser = SseParser()
        events = []
        for start in range(0, len(stream), size):
            events += parser.feed(stream[start : start + size])
        assert events == [b'{"a":1}', b"[1,\n2]", b"{}"]


def test_sse_event_size_is_bounded() -> None:
    parser = SseParser(max_event=10)
    with pytest.raises(ValueError):
        parser.feed(b"data: " + b"x" * 11 + b"\n\n")
    with pytest.raises(ValueError):
        SseParser(max_event=10).feed(b"data: " + b"x" * 20)  # no newline yet


def test_session_scoping() -> None:
    assert message_session({"method": "session/update", "params": {"sessionId": "s"}}) == "s"
    assert message_session({"method": "$/cancel_request", "params": {"sessionId": "s"}}) is None
    assert message_session({"method": "x", "params": [1]}) is None
    assert message_session({"id": 1, "result": {"sessionId": "s"}}) is None
    assert len({id_key(1), id_key(1.0), id_key(True), id_key("1")}) == 4


class Sink:
    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox
        self.ended = False

    def offer(self, message: bytes) -> bool:
        return self.mailbox.push(message)

    async def room(self) -> None:
        await self.mailbox.room()

    def end(self) -> None:
        self.ended = True
        self.mailbox.end()


@pytest.mark.anyio
async def test_a_full_sink_paces_the_writer_and_loses_nothing() -> None:
    backend = current_backend()
    mailbox = Mailbox(backend, capacity=100)
    sink = Sink(mailbox)
    channel = MessageChannel(backend, sink)
    messages = [b'{"n":%d,"pad":"%s"}' % (n, b"x" * 30) for n in range(50)]
    taken: list[bytes] = []
    async with anyio.create_task_group() as group:
        group.start_soon(channel.run)
        channel.write(b"".join(m + b"\n" for m in messages))
        assert channel.pending > 0  # the sink took only what fits
        assert mailbox.size < 100 + 60

        async def reader() -> None:
            while (items := await mailbox.take()) is not None:
                taken.extend(items)

        group.start_soon(reader)
        await channel.drain()
        await channel.close_write()
    assert taken == messages
    assert sink.ended


@pytest.mark.anyio
async def test_input_is_one_message_per_line_and_ends_cleanly() -> None:
    backend = current_backend()
    channel = MessageChannel(backend, Sink(Mailbox(backend, 100)))
    channel.put_nowait(b'{\n  "a": 1\r\n}')
    await channel.put(b"[]")
    assert await channel.receive() == b'{   "a": 1  }\n[]\n'
    channel.lose_input("link lost")
    assert await channel.receive() == b""  # an EOF: the peer is gone
    assert channel.describe_end is not None
    assert await channel.describe_end() == {"transport": "link lost"}


@pytest.mark.anyio
async def test_a_socket_going_away_still_sends_what_its_agent_writes_then_closes() -> None:
    """Server shutdown (``going_away``) only sets the Close code: what the
    agent writes afterwards, as it ends, still goes out before the Close."""
    from acp_fast._transports.remote.connection import SocketSink
    from acp_fast._transports.remote.server import SocketChannel, _socket_sender

    backend = current_backend()
    mailbox = Mailbox(backend, capacity=1 << 20)

    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    channel = SocketChannel(backend, SocketSink(mailbox), receive, 1 << 20)
    async with anyio.create_task_group() as group:
        group.start_soon(channel.run)
        group.start_soon(_socket_sender, send, mailbox, channel)
        channel.write(b'{"before":1}\n')
        await channel.drain()
        channel.going_away()
        channel.write(b'{"after":2}\n')  # the agent's last words, as it ends
        await channel.drain()
        await channel.close_write()
    assert sent == [
        {"type": "websocket.send", "text": '{"before":1}'},
        {"type": "websocket.send", "text": '{"after":2}'},
        {"type": "websocket.close", "code": 1001},
    ]
