"""docs/semantics.md §6.D: transport close and the EOF sequence, #35–#65.

Each test is named ``test_s<N>_<scenario>`` after the checklist entry it
ports (#34 is a Rust type-system check and has no Python counterpart).

Transport-level scenarios run over our own transports: ``memory_pair`` with a
tiny ``capacity`` stands for "the output pipe holds 1 byte", real ``os.pipe``
and socket pairs are used where the kernel's behaviour matters, and
``acp.ByteStreams`` over custom anyio streams simulate buffered writers and
read errors.

Deliberate difference from the Rust SDK exercised here: ``connect_with`` (and
``async with builder.connect(...)``) drains queued output, up to a timeout,
when ``main`` ends normally (the Rust SDK drops it).
"""

from __future__ import annotations

import fcntl
import os
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast._async.builder import DRAIN_TIMEOUT
from acp_fast._io.backend import current_backend
from acp_fast.testing import memory_pair, socket_pair
from tests.support import (
    TIMEOUT,
    FailingReceiveStream,
    MemoryByteStream,
    RawPeer,
    RecordingSendStream,
    byte_stream_pair,
    over,
)

pytestmark = pytest.mark.anyio

MY_REQUEST = "myRequest"


def my_request(**params: Any) -> acp.UntypedMessage:
    return acp.UntypedMessage(MY_REQUEST, params or {"value": 1})


def eof_error_of(error: BaseException, method: str = MY_REQUEST) -> None:
    """Assert ``error`` is the EOF failure of a request for ``method`` (§1.3)."""
    assert isinstance(error, acp.Error), error
    assert acp.is_incoming_transport_closed(error)
    assert error.code == acp.ErrorCode.INTERNAL_ERROR
    assert error.message == "Incoming transport closed"
    assert error.data == {"reason": "incoming_transport_closed", "method": method}


async def received(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
    responder.respond({"status": "received"})


def receiving_server() -> acp.Builder[Any]:
    return acp.UntypedRole.builder().name("server").on_receive_request(received, MY_REQUEST)


# --- #35–#44: connect_to and the final drain ------------------------------------


async def test_s35_connect_to_returns_cleanly_on_incoming_eof_with_spawned_work():
    started = anyio.Event()

    async def forever(cx: Any) -> None:
        started.set()
        await anyio.sleep_forever()

    ours, theirs = memory_pair()
    async with RawPeer(theirs) as peer:
        await peer.close_output()  # the peer closes at once
        with anyio.fail_after(2):
            await acp.UntypedRole.builder().with_spawned(forever).connect_to(ours)
        assert started.is_set()
        await peer.receive_eof()


async def serve_until_eof(builder: acp.Builder[Any], transport: acp.Transport, done: list[str]):
    await builder.connect_to(transport)
    done.append("ok")


async def half_close_exchange(sdk: acp.Transport, peer_transport: acp.Transport, request_id: Any):
    """The peer writes one request and half-closes; it must read the whole
    answer, then EOF, and ``connect_to`` must return normally."""
    done: list[str] = []
    async with anyio.create_task_group() as group, RawPeer(peer_transport) as peer:
        group.start_soon(serve_until_eof, receiving_server(), sdk, done)
        peer.send({"jsonrpc": "2.0", "id": request_id, "method": MY_REQUEST, "params": {}})
        await peer.close_output()
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"status": "received"},
        }
        await peer.receive_eof()
    assert done == ["ok"]


async def test_s36_connect_to_flushes_response_queued_before_incoming_eof():
    # The SDK's output holds one byte at a time: the answer is still queued
    # when the EOF sequence runs, and must be flushed before connect_to returns.
    ours, theirs = memory_pair(capacity=1)
    await half_close_exchange(ours, theirs, 1)


async def test_s36_connect_to_flushes_through_a_full_os_pipe():
    # The same with real pipes, the SDK's output pipe shrunk to one page and
    # an answer many times that size.
    big = "x" * (1 << 20)

    async def answer_big(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond({"status": "received", "padding": big})

    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux; elsewhere the 1 MiB answer suffices
        fcntl.fcntl(from_sdk_w, fcntl.F_SETPIPE_SZ, 4096)
    sdk = acp.FdTransport(to_sdk_r, from_sdk_w, close=True)
    peer_transport = acp.FdTransport(from_sdk_r, to_sdk_w, close=True)
    done: list[str] = []
    builder = acp.UntypedRole.builder().on_receive_request(answer_big, MY_REQUEST)
    async with anyio.create_task_group() as group, RawPeer(peer_transport) as peer:
        group.start_soon(serve_until_eof, builder, sdk, done)
        peer.send({"jsonrpc": "2.0", "id": 1, "method": MY_REQUEST})
        await peer.close_output()
        answer = await peer.receive()
        assert answer["id"] == 1 and answer["result"] == {"status": "received", "padding": big}
        await peer.receive_eof()
    assert done == ["ok"]


async def test_s37_channel_peer_receives_final_response_after_write_half_closes():
    ours, theirs = memory_pair()
    await half_close_exchange(ours, theirs, 40)


async def test_s37_socket_peer_receives_final_response_after_write_half_closes():
    ours, theirs = socket_pair()
    await half_close_exchange(ours, theirs, 40)


async def test_s37_tcp_stream_peer_receives_final_response_after_write_half_closes():
    # acp.ByteStreams over anyio TCP streams: the half-close is send_eof.
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as multi:
        listener = multi.listeners[0]
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        accepted: list[anyio.abc.SocketStream] = []
        async with anyio.create_task_group() as group:

            async def accept() -> None:
                accepted.append(await listener.accept())

            group.start_soon(accept)
            client = await anyio.connect_tcp("127.0.0.1", port)
        await half_close_exchange(over(accepted[0]), over(client), 40)


class BufferedSendStream(anyio.abc.ByteSendStream):
    """Buffers everything until flushed by ``send_eof``/``aclose`` (or until
    ``limit`` bytes are held), like a ``BufWriter``."""

    def __init__(self, inner: MemoryByteStream, limit: int = 1 << 20) -> None:
        self.inner = inner
        self.buffer = bytearray()
        self.limit = limit

    async def send(self, item: bytes) -> None:
        self.buffer += item
        if len(self.buffer) >= self.limit:
            await self.flush()

    async def flush(self) -> None:
        if self.buffer:
            data, self.buffer = bytes(self.buffer), bytearray()
            await self.inner.send(data)

    async def send_eof(self) -> None:
        await self.flush()
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.flush()
        await self.inner.aclose()


async def test_s38_connect_to_flushes_a_buffered_byte_writer():
    ours, theirs = byte_stream_pair()
    await half_close_exchange(acp.ByteStreams(ours, BufferedSendStream(ours)), over(theirs), 1)


async def test_s39_transport_channel_keeps_read_half_open_after_write_half_closes():
    # Transport level: the channels under each kind of transport.
    pairs: list[tuple[acp.Transport, acp.Transport]] = [memory_pair(), socket_pair()]
    a, b = byte_stream_pair()
    pairs.append((over(a), over(b)))
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    pairs.append(
        (
            acp.FdTransport(to_sdk_r, from_sdk_w, close=True),
            acp.FdTransport(from_sdk_r, to_sdk_w, close=True),
        )
    )
    for sdk, peer_transport in pairs:
        async with sdk._open(current_backend()) as channel, RawPeer(peer_transport) as peer:
            async with anyio.create_task_group() as group:
                group.start_soon(channel.run)
                channel.write(b'{"jsonrpc":"2.0","id":41,"method":"myRequest"}\n')
                group.start_soon(channel.close_write)  # the SDK ends its output only
                assert (await peer.receive())["id"] == 41
                await peer.receive_eof()
                peer.send({"jsonrpc": "2.0", "id": 41, "result": {"status": "received"}})
                with anyio.fail_after(TIMEOUT):
                    data = b""
                    while not data.endswith(b"\n"):
                        chunk = await channel.receive()
                        assert chunk, "the read half closed with the write half"
                        data += chunk
                assert data == b'{"jsonrpc":"2.0","id":41,"result":{"status":"received"}}\n'
                group.cancel_scope.cancel()


class DelegatingStream(anyio.abc.ByteStream):
    """A transport wrapper: forwards everything to ``inner``."""

    def __init__(self, inner: anyio.abc.ByteStream) -> None:
        self.inner = inner

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self.inner.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self.inner.send(item)

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_s40_wrapped_byte_streams_flush_response_queued_before_incoming_eof():
    # One byte per send: the answer is still crawling out at EOF.
    ours, theirs = byte_stream_pair(max_chunk=1)
    await half_close_exchange(over(DelegatingStream(ours)), over(theirs), 1)


async def test_s41_wrapped_byte_streams_client_success_does_not_wait_for_peer_eof():
    ours, theirs = byte_stream_pair()

    async def main(cx: Any) -> str:
        return "done"

    # The peer never writes and never closes: the client must not wait for it.
    with anyio.fail_after(TIMEOUT):
        assert await acp.UntypedRole.builder().connect_with(over(DelegatingStream(ours)), main) == (
            "done"
        )
    assert ours.closed
    await theirs.aclose()


@pytest.mark.parametrize("link", ["memory", "socket"])
async def test_s42_outgoing_drain_keeps_the_full_duplex_read_half_moving(link: str):
    # The peer writes a pile of lines and reads only once they are all taken;
    # the SDK has a notification queued when main ends. The drain must keep
    # reading, or both sides would wait on each other forever. (The Rust SDK
    # reads and discards during its drain; acp_fast keeps dispatching until
    # the connection stops, so these unknown notifications are just ignored.)
    if link == "memory":
        ours, theirs = memory_pair(capacity=1)
        count, padding = 40, "p" * 20
    else:
        ours, theirs = socket_pair()
        count, padding = 64, "p" * (64 * 1024)
    escaped: list[acp.ConnectionTo[Any]] = []

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        cx.send_notification(acp.UntypedMessage("final/notification", {"padding": padding * 4}))
        escaped.append(cx)

    async with RawPeer(theirs) as peer:
        for index in range(count):
            peer.send({"jsonrpc": "2.0", "method": "noise", "params": {"i": index, "p": padding}})
        async with anyio.create_task_group() as group:
            group.start_soon(acp.UntypedRole.builder().connect_with, ours, main)
            with anyio.fail_after(TIMEOUT):
                await peer.channel.drain()  # all our lines were read by the SDK
            note = await peer.receive()
        assert note == {
            "jsonrpc": "2.0",
            "method": "final/notification",
            "params": {"padding": padding * 4},
        }
        await peer.receive_eof()
    with pytest.raises(acp.Error):
        escaped[0].send_notification(acp.UntypedMessage("too/late", {}))


async def test_s43_outgoing_drain_propagates_incoming_read_error():
    receive = FailingReceiveStream()
    send = RecordingSendStream(blocked=True)  # the queued output never drains
    # The read fails while the drain is under way (the writer is sending).
    send.on_send_start = receive.fail.set

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        cx.send_notification(acp.UntypedMessage("queued/notification", {}))

    # Well within the drain timeout: the read error must end the drain.
    with pytest.raises(acp.Error) as caught, anyio.fail_after(DRAIN_TIMEOUT / 2):
        await acp.UntypedRole.builder().connect_with(acp.ByteStreams(receive, send), main)
    assert caught.value.code == acp.ErrorCode.INTERNAL_ERROR
    assert "read failed during outgoing drain" in str(caught.value.data)
    assert not acp.is_incoming_transport_closed(caught.value)


async def test_s44_clean_outgoing_drain_does_not_hide_ready_incoming_read_error():
    receive = FailingReceiveStream()
    send = RecordingSendStream()
    # The moment the queued output is taken, a read error becomes ready.
    send.on_send = receive.fail.set

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        cx.send_notification(acp.UntypedMessage("queued/notification", {}))

    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().connect_with(acp.ByteStreams(receive, send), main)
    assert "read failed" in str(caught.value.data)
    assert not acp.is_incoming_transport_closed(caught.value)
    assert send.lines() == [{"jsonrpc": "2.0", "method": "queued/notification", "params": {}}]


# --- #45–#57: connect_with, on_close and the EOF sequence ------------------------


async def test_s45_escaped_connection_handle_does_not_retain_the_transport():
    ours, theirs = byte_stream_pair(capacity=16)
    escaped: list[Any] = []

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        escaped.append((cx, cx.send_request(my_request())))  # never answered

    with anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().connect_with(over(ours), main)
    assert ours.closed  # the transport was released although cx escaped
    async with RawPeer(over(theirs)) as peer:
        assert (await peer.receive())["method"] == MY_REQUEST
        await peer.receive_eof()
    cx, sent = escaped.pop()
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await sent.block_task()
    assert not acp.is_incoming_transport_closed(caught.value)
    assert caught.value.code == acp.ErrorCode.INTERNAL_ERROR
    assert f"response to `{MY_REQUEST}` never received" in caught.value.data
    # A request made on the escaped handle fails at once.
    with pytest.raises(acp.Error) as late:
        await cx.send_request(my_request())
    assert "no longer running" in str(late.value.data)


async def test_s46_connect_with_can_await_incoming_close():
    ours, theirs = memory_pair()
    ours.close_input()  # the peer's output ends at once

    async def main(cx: acp.ConnectionTo[Any]) -> bool:
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        return cx.is_incoming_closed()

    assert await acp.UntypedRole.builder().connect_with(ours, main) is True


async def test_s47_on_close_runs_exactly_once_at_eof():
    ours, theirs = memory_pair()
    ours.close_input()
    calls: list[str] = []

    async def on_close() -> None:
        calls.append("closed")

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        assert calls == ["closed"]
        return "ok"

    assert await acp.UntypedRole.builder().on_close(on_close).connect_with(ours, main) == "ok"
    assert calls == ["closed"]


async def test_s48_on_close_error_stops_a_pending_connect_with_foreground():
    ours, theirs = memory_pair()
    ours.close_input()

    async def on_close() -> None:
        raise acp.Error.internal_error("close failed")

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        await anyio.sleep_forever()

    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().on_close(on_close).connect_with(ours, main)
    assert caught.value.data == "close failed"


async def test_s48_on_close_error_stops_a_pending_connect_block():
    # The same with ``async with builder.connect(...)``: the block is stopped
    # and the error comes out of the ``async with``.
    ours, theirs = memory_pair()
    ours.close_input()
    reached: list[str] = []

    async def on_close() -> None:
        raise acp.Error.internal_error("close failed")

    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        async with acp.UntypedRole.builder().on_close(on_close).connect(ours):
            await anyio.sleep_forever()
            reached.append("after")  # never
    assert caught.value.data == "close failed"
    assert reached == []


async def test_s49_on_close_error_wins_over_foreground_close_waiter():
    ours, theirs = memory_pair()
    ours.close_input()

    async def on_close() -> None:
        raise acp.Error.internal_error("close failed")

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        await cx.incoming_closed()
        return "main finished"

    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().on_close(on_close).connect_with(ours, main)
    assert caught.value.data == "close failed"


async def test_s50_successful_on_close_does_not_cancel_unrelated_foreground_work():
    ours, theirs = memory_pair()
    release = anyio.Event()
    closed: list[bool] = []

    async def on_close() -> None:
        closed.append(True)

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        # Still running: outgoing notifications can be sent after EOF.
        cx.send_notification(acp.UntypedMessage("after/eof", {}))
        with anyio.fail_after(TIMEOUT):
            await release.wait()
        return "released"

    async with RawPeer(theirs) as peer, anyio.create_task_group() as group:
        results: list[str] = []

        async def run() -> None:
            builder = acp.UntypedRole.builder().on_close(on_close)
            results.append(await builder.connect_with(ours, main))

        group.start_soon(run)
        await peer.close_output()
        assert (await peer.receive())["method"] == "after/eof"
        assert closed == [True] and results == []
        release.set()
    assert results == ["released"]


async def test_s51_all_on_close_callbacks_run_in_order_and_the_first_error_wins():
    ours, _ = memory_pair()
    ours.close_input()
    order: list[int] = []

    async def first() -> None:
        order.append(1)
        raise acp.Error.internal_error("first close callback failed")

    async def second() -> None:
        order.append(2)
        raise acp.Error.internal_error("second close callback failed")

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        await anyio.sleep_forever()

    builder = acp.UntypedRole.builder().on_close(first).on_close(second)
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await builder.connect_with(ours, main)
    assert order == [1, 2]
    assert caught.value.data == "first close callback failed"


async def test_s52_merged_builders_preserve_close_callback_order():
    ours, _ = memory_pair()
    ours.close_input()
    order: list[int] = []

    async def first() -> None:
        order.append(1)
        raise acp.Error.internal_error("first builder close failed")

    async def second() -> None:
        order.append(2)
        raise acp.Error.internal_error("second builder close failed")

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        await anyio.sleep_forever()

    merged = (
        acp.UntypedRole.builder()
        .on_close(first)
        .with_connection_builder(acp.UntypedRole.builder().on_close(second))
    )
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await merged.connect_with(ours, main)
    assert order == [1, 2]
    assert caught.value.data == "first builder close failed"


async def test_s53_pending_requests_fail_before_on_close_finishes():
    ours, theirs = memory_pair()
    observed = anyio.Event()
    state = {"close_running": False, "close_done": False}

    async def on_close() -> None:
        state["close_running"] = True
        with anyio.fail_after(TIMEOUT):
            await observed.wait()
        state["close_done"] = True

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        sent = cx.send_request(my_request())
        with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
            await sent
        eof_error_of(caught.value)
        # The failure reached us while the close callback was still running.
        assert state == {"close_running": True, "close_done": False}
        observed.set()
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        assert state["close_done"]
        return "ok"

    async with RawPeer(theirs) as peer, anyio.create_task_group() as group:
        results: list[str] = []

        async def run() -> None:
            builder = acp.UntypedRole.builder().on_close(on_close)
            results.append(await builder.connect_with(ours, main))

        group.start_soon(run)
        assert (await peer.receive())["method"] == MY_REQUEST
        await peer.close_output()
    assert results == ["ok"]


async def test_s54_request_consumer_error_does_not_cancel_on_close_callbacks():
    consumer_failed = anyio.Event()
    order: list[int] = []
    seen: list[Any] = []

    def consume(result: Any) -> None:
        seen.append(result)
        consumer_failed.set()
        if isinstance(result, acp.Error):
            raise result

    async def first() -> None:
        order.append(1)
        with anyio.fail_after(TIMEOUT):
            await consumer_failed.wait()
        raise acp.Error.internal_error("close callback failed")

    async def second() -> None:
        order.append(2)

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        cx.send_request(my_request()).on_receiving_result(consume)
        await anyio.sleep_forever()

    async def peer_side(peer: RawPeer) -> None:
        assert (await peer.receive())["method"] == MY_REQUEST
        await peer.close_output()

    builder = acp.UntypedRole.builder().on_close(first).on_close(second)
    with pytest.raises(acp.Error) as caught:
        await run_with_peer(builder, main, peer_side)
    assert caught.value.data == "close callback failed"
    assert order == [1, 2]
    assert len(seen) == 1
    eof_error_of(seen[0])


async def test_s55_queued_request_is_failed_as_eof_before_outgoing_actor_runs():
    ours, _ = memory_pair()
    ours.close_input()  # EOF is already there when the request is queued
    failures: list[BaseException] = []

    async def on_close() -> None:
        raise acp.Error.internal_error("close failed")

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        sent = cx.send_request(my_request())
        try:
            await sent
        except acp.Error as error:
            failures.append(error)
        await anyio.sleep_forever()

    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().on_close(on_close).connect_with(ours, main)
    assert caught.value.data == "close failed"
    assert len(failures) == 1
    eof_error_of(failures[0])


async def test_s56_on_close_observes_queued_requests_already_failed():
    ours, _ = memory_pair()
    ours.close_input()
    pending: list[acp.SentRequest[Any]] = []
    observed: list[Any] = []

    async def on_close() -> None:
        # The result must already be there: awaiting it inside an already
        # cancelled scope only completes if it needs no wait at all.
        with anyio.CancelScope() as scope:
            scope.cancel()
            try:
                await pending[0]
            except acp.Error as error:
                observed.append(error)
        observed.append("cancelled" if scope.cancelled_caught else "completed")

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        pending.append(cx.send_request(my_request()))
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        return "ok"

    assert await acp.UntypedRole.builder().on_close(on_close).connect_with(ours, main) == "ok"
    assert observed[1] == "completed"
    eof_error_of(observed[0])


async def test_s57_request_finishing_conversion_after_eof_keeps_the_eof_cause():
    # Python form: the request gets its id before EOF (prepare_request) but is
    # published only after EOF and after the driver stopped; it must fail with
    # the EOF cause, not with "connection is no longer running".
    ours, _ = memory_pair()
    ours.close_input()

    escaped: list[acp.ConnectionTo[Any]] = []

    async def main(cx: acp.ConnectionTo[Any]) -> acp.PreparedRequest[Any]:
        escaped.append(cx)
        prepared = cx.prepare_request(acp.UntypedMessage("blockingRequest", {}))
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        return prepared

    prepared = await acp.UntypedRole.builder().connect_with(ours, main)
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await prepared.block_task()
    eof_error_of(caught.value, "blockingRequest")
    # A request made on the stopped connection after EOF: the EOF cause too.
    with pytest.raises(acp.Error) as late, anyio.fail_after(TIMEOUT):
        await escaped[0].send_request(acp.UntypedMessage("blockingRequest", {}))
    eof_error_of(late.value, "blockingRequest")


# --- #58–#65: what pending requests see at EOF -----------------------------------


async def run_with_peer(
    builder: acp.Builder[Any],
    main: Any,
    peer_side: Any,
    pair: tuple[acp.Transport, acp.Transport] | None = None,
) -> Any:
    """``builder.connect_with(ours, main)`` while ``peer_side(peer)`` runs;
    returns its result or raises its ``acp.Error``."""
    ours, theirs = pair or memory_pair()
    result: Any = None
    failure: acp.Error | None = None
    async with RawPeer(theirs) as peer, anyio.create_task_group() as group:
        group.start_soon(peer_side, peer)
        try:
            with anyio.fail_after(TIMEOUT):
                result = await builder.connect_with(ours, main)
        except acp.Error as error:
            failure = error
    if failure is not None:
        raise failure
    return result


async def test_s58_incoming_eof_fails_every_pending_request():
    async def main(cx: acp.ConnectionTo[Any]) -> list[BaseException]:
        first, second = cx.send_request(my_request()), cx.send_request(my_request())
        errors = []
        for sent in (first, second):
            with pytest.raises(acp.Error) as caught:
                await sent
            errors.append(caught.value)
        return errors

    async def peer_side(peer: RawPeer) -> None:
        assert (await peer.receive())["method"] == MY_REQUEST
        assert (await peer.receive())["method"] == MY_REQUEST
        await peer.close_output()
        # Failing at EOF disarms the requests: no $/cancel_request follows.
        await peer.receive_eof()

    errors = await run_with_peer(acp.UntypedRole.builder(), main, peer_side)
    assert len(errors) == 2
    for error in errors:
        eof_error_of(error)


@pytest.mark.parametrize("link", ["socket", "pipe"])
async def test_s59_byte_stream_eof_fails_an_in_flight_request(link: str):
    if link == "socket":
        pair = socket_pair()
    else:
        to_sdk_r, to_sdk_w = os.pipe()
        from_sdk_r, from_sdk_w = os.pipe()
        pair = (
            acp.FdTransport(to_sdk_r, from_sdk_w, close=True),
            acp.FdTransport(from_sdk_r, to_sdk_w, close=True),
        )

    async def main(cx: acp.ConnectionTo[Any]) -> BaseException:
        with pytest.raises(acp.Error) as caught:
            await cx.send_request(my_request())
        return caught.value

    async def peer_side(peer: RawPeer) -> None:
        await peer.receive_line()
        await peer.close_output()

    eof_error_of(await run_with_peer(acp.UntypedRole.builder(), main, peer_side, pair))


async def test_s60_incoming_eof_delivers_error_to_callback_style_request_consumer():
    seen: list[Any] = []
    delivered = anyio.Event()

    async def consume(result: Any) -> None:
        seen.append(result)
        delivered.set()

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        cx.send_request(my_request()).on_receiving_result(consume)
        with anyio.fail_after(TIMEOUT):
            await delivered.wait()

    async def peer_side(peer: RawPeer) -> None:
        await peer.receive_line()
        await peer.close_output()

    await run_with_peer(acp.UntypedRole.builder(), main, peer_side)
    assert len(seen) == 1
    eof_error_of(seen[0])


async def test_s61_response_buffered_before_eof_is_delivered():
    async def main(cx: acp.ConnectionTo[Any]) -> Any:
        sent = cx.send_request(my_request())
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()  # the answer came before EOF
            return await sent

    async def peer_side(peer: RawPeer) -> None:
        request_id = (await peer.receive())["id"]
        peer.send({"jsonrpc": "2.0", "id": request_id, "result": "received"})
        await peer.close_output()

    assert await run_with_peer(acp.UntypedRole.builder(), main, peer_side) == "received"


async def swallow_responses(dispatch: Any, cx: Any) -> Any:
    if isinstance(dispatch, acp.ResponseDispatch):
        return None  # claimed, router dropped
    return acp.NOT_HANDLED


async def answer_then_close(peer: RawPeer) -> None:
    request_id = (await peer.receive())["id"]
    peer.send({"jsonrpc": "2.0", "id": request_id, "result": "received"})
    await peer.close_output()


async def test_s62_response_router_drop_before_eof_is_not_reported_as_eof():
    async def main(cx: acp.ConnectionTo[Any]) -> BaseException:
        with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
            await cx.send_request(my_request())
        return caught.value

    builder = acp.UntypedRole.builder().on_receive_dispatch(swallow_responses)
    error = await run_with_peer(builder, main, answer_then_close)
    assert not acp.is_incoming_transport_closed(error)
    assert error.code == acp.ErrorCode.INTERNAL_ERROR
    assert f"response to `{MY_REQUEST}` never received" in error.data


async def test_s63_response_router_drop_after_eof_does_not_invoke_result_callback():
    calls: list[Any] = []

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        sent = cx.send_request(my_request())
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        sent.on_receiving_result(calls.append)
        await anyio.sleep_forever()

    builder = acp.UntypedRole.builder().on_receive_dispatch(swallow_responses)
    with pytest.raises(acp.Error) as caught:
        await run_with_peer(builder, main, answer_then_close)
    assert calls == []
    assert not acp.is_incoming_transport_closed(caught.value)
    assert f"response to `{MY_REQUEST}` never received" in caught.value.data


async def test_s64_request_created_after_incoming_eof_fails_immediately():
    ours, _ = memory_pair()
    ours.close_input()

    async def main(cx: acp.ConnectionTo[Any]) -> BaseException:
        with anyio.fail_after(TIMEOUT):
            await cx.incoming_closed()
        sent = cx.send_request(my_request())
        # No wait: awaiting inside an already cancelled scope still yields it.
        with anyio.CancelScope() as scope:
            scope.cancel()
            with pytest.raises(acp.Error) as caught:
                await sent
        assert not scope.cancelled_caught
        return caught.value

    eof_error_of(await acp.UntypedRole.builder().connect_with(ours, main))


READ_ERRORS: dict[str, Any] = {
    "os-error": lambda: OSError(5, "simulated read failure"),
    "broken": lambda: anyio.BrokenResourceError("simulated broken stream"),
    # Whatever a custom stream raises is a read error of the transport too,
    # reported as the connection's acp.Error (never as an ExceptionGroup).
    "incomplete": anyio.IncompleteRead,
    "runtime-error": lambda: RuntimeError("simulated stream bug"),
}


@pytest.mark.parametrize("transport", [*READ_ERRORS, "pipe"])
async def test_s65_incoming_read_error_is_not_reported_as_clean_eof(transport: str):
    closes: list[str] = []
    if transport in READ_ERRORS:
        sdk: acp.Transport = acp.ByteStreams(
            FailingReceiveStream(fail_now=True, error=READ_ERRORS[transport]()),
            RecordingSendStream(),
        )
    else:
        # A read error from the OS: reading a descriptor opened write-only.
        fd = os.open(os.devnull, os.O_WRONLY)
        sdk = acp.FdTransport(fd, fd, close=True)
    builder = acp.UntypedRole.builder().on_close(lambda: closes.append("closed"))
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await builder.connect_to(sdk)
    assert caught.value.code == acp.ErrorCode.INTERNAL_ERROR
    assert "read failed" in str(caught.value.data)
    assert not acp.is_incoming_transport_closed(caught.value)
    assert closes == []  # not an EOF: the close callbacks do not run
