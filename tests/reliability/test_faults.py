"""Faults: a peer that dies, a broken write side, handlers that raise anything,
cancellation racing the answer.

What must happen (docs/semantics.md §2.6, §2.7; decided here where the
reference has no equivalent):

* **The peer dies** (process killed, both pipe ends gone): a clean EOF. Every
  pending request settles with -32603 "Incoming transport closed"
  (``acp.is_incoming_transport_closed``), callbacks included; ``on_close``
  runs once, after that; new requests fail at once; no task or descriptor
  is left behind.
* **The write side breaks** while the peer still talks: the connection fails
  with "transport write failed" (§2.7). If the peer's EOF follows, the peer
  is gone and the end is clean, even with answers still to forward.
* **A handler raises**:

  - any ``Exception``: the request is answered -32603 with
    ``data.details = "Type: message"`` (an ``acp.Error`` is sent as it is;
    what cannot be encoded in it is replaced by its ``ascii()`` form); the
    connection goes on. A ``__str__`` that raises, a lone surrogate, data
    nested too deep: still answered, never the end of the connection;
  - ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` or any other
    ``BaseException`` that is not a cancellation: the request is answered
    -32603 (``details`` names it) so the peer is not left waiting, then the
    connection stops at once and ``connect*`` raises that exception itself,
    not wrapped in an exception group (``sys.exit(3)`` in a handler exits
    with status 3). The same holds for a ``cx.spawn``-ed task;
  - on asyncio, a ``CancelledError`` raised while the task was not
    cancelled (re-raised from an inner task): a handler failure like any
    ``Exception``, where it used to stop the dispatch loop silently (a hang).
"""

from __future__ import annotations

import asyncio
import builtins
import os
import random
import signal
import subprocess
import sys
from typing import Any

import anyio
import orjson
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.rpc.wire import barrier_from_peer, facing_raw_peer, is_cancel
from tests.support import SIMPLE, TIMEOUT, RawPeer, echo_server, serving, simple

pytestmark = pytest.mark.anyio


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def running_tasks() -> int:
    return len(anyio.get_running_tasks())


def is_eof_error(error: BaseException, method: str) -> bool:
    return (
        isinstance(error, acp.Error)
        and acp.is_incoming_transport_closed(error)
        and error.code == -32603
        and error.message == "Incoming transport closed"
        and error.data["reason"] == "incoming_transport_closed"
        and error.data["method"] == method
    )


# --- the peer process is killed mid-request -------------------------------------------

CHILD_AGENT = """
import os
import anyio
import acp_fast as acp

held = []  # responders kept alive, never answered

async def pid(message, responder, cx):
    responder.respond({"pid": os.getpid()})

async def hang(message, responder, cx):
    held.append(responder)

builder = (
    acp.UntypedRole.builder()
    .on_receive_request(pid, "pid")
    .on_receive_request(hang, "hang")
)
anyio.run(builder.connect_to, acp.stdio())
"""


async def test_peer_process_killed_mid_request_settles_every_pending_request():
    fds, tasks = open_fds(), running_tasks()
    order: list[str] = []
    transport = acp.Subprocess([sys.executable, "-c", CHILD_AGENT], stderr=subprocess.DEVNULL)
    results: dict[str, Any] = {}

    async def on_close() -> None:
        order.append(f"on_close (pending: {cx._table.outgoing_count})")

    builder = acp.UntypedRole.builder().name("client").on_close(on_close)
    async with builder.connect(transport) as cx:
        with anyio.fail_after(TIMEOUT):
            pid = (await cx.send_request(acp.UntypedMessage("pid", {})))["pid"]

        async def wait_for(label: str, sent: acp.SentRequest[Any]) -> None:
            try:
                results[label] = await sent
            except acp.Error as error:
                results[label] = error
            order.append(label)

        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(
                    wait_for, f"awaited-{n}", cx.send_request(acp.UntypedMessage("hang", {"n": n}))
                )
            cx.send_request(acp.UntypedMessage("hang", {})).on_receiving_result(
                lambda value: results.__setitem__("callback", value)
            )
            cx.send_request(acp.UntypedMessage("hang", {})).detach()
            guarded = cx.send_request(acp.UntypedMessage("hang", {}))
            cx.prepare_request(acp.UntypedMessage("hang", {}))  # never published: nothing to settle
            # Everything is on the wire and read: a round trip after it.
            with anyio.fail_after(TIMEOUT):
                await cx.send_request(acp.UntypedMessage("pid", {}))
            assert cx._table.outgoing_count == 6
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(TIMEOUT):
                await cx.incoming_closed()
        with anyio.fail_after(TIMEOUT), pytest.raises(acp.Error) as caught:
            await guarded
        assert is_eof_error(caught.value, "hang")
        # How it ended (docs/semantics.md §1.3): killed, by SIGKILL.
        assert caught.value.data["signal"] == "SIGKILL"
        assert caught.value.data["exitStatus"] == -9
        for n in range(3):
            assert is_eof_error(results[f"awaited-{n}"], "hang")
        assert is_eof_error(results["callback"], "hang")
        # EOF order (§2.6): pending requests fail, then on_close, then closed.
        assert order[0] == "on_close (pending: 0)" and order.count(order[0]) == 1
        assert cx._table.outgoing_count == 0 and cx.is_incoming_closed()
        # A request made now fails at once with the same error, and sends nothing.
        with anyio.fail_after(TIMEOUT), pytest.raises(acp.Error) as caught:
            await cx.send_request(acp.UntypedMessage("late", {}))
        assert is_eof_error(caught.value, "late")
    assert transport.returncode == -signal.SIGKILL
    assert running_tasks() == tasks
    assert open_fds() == fds


CHILD_CLIENT = """
import sys, time
sys.stdout.write('{"jsonrpc":"2.0","id":"ask-1","method":"ask","params":{}}\\n')
sys.stdout.flush()
time.sleep(60)
"""


async def test_agent_side_peer_killed_while_it_owes_an_answer():
    """connect_to: the client asked, we asked back and forward its answer;
    the client dies. The forwarded request settles with the EOF error and
    connect_to returns cleanly, on_close having run."""
    fds, tasks = open_fds(), running_tasks()
    asked = anyio.Event()
    closed: list[int] = []
    handles: list[Any] = []

    async def ask(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        sent = cx.send_request(acp.UntypedMessage("perm", {}))
        handles.append(sent.cancellation_handle())
        sent.forward_response_to(responder)
        asked.set()

    transport = acp.Subprocess([sys.executable, "-c", CHILD_CLIENT], grace_period=0.5)
    builder = acp.UntypedRole.builder().name("agent").on_receive_request(ask, "ask")
    builder.on_close(lambda: closed.append(1))
    async with anyio.create_task_group() as group:

        async def kill_when_asked() -> None:
            with anyio.fail_after(TIMEOUT):
                await asked.wait()
            assert transport.process is not None
            transport.process.kill()

        group.start_soon(kill_when_asked)
        with anyio.fail_after(TIMEOUT):
            await builder.connect_to(transport)
    assert closed == [1]
    handles[0].cancel()  # settled: a no-op, never an error
    assert transport.returncode == -signal.SIGKILL
    assert running_tasks() == tasks
    assert open_fds() == fds


# --- the write side breaks ------------------------------------------------------------


class Pipes:
    """Two OS pipes: the connection's transport, and the peer's raw ends."""

    def __init__(self) -> None:
        self.ours_read, self.peer_write = os.pipe()
        self.peer_read, self.ours_write = os.pipe()
        os.set_blocking(self.peer_read, False)

    def transport(self) -> acp.FdTransport:
        return acp.FdTransport(self.ours_read, self.ours_write, close=True)

    def write(self, line: bytes) -> None:
        os.write(self.peer_write, line + b"\n")

    async def read_line(self) -> bytes:
        data = b""
        with anyio.fail_after(TIMEOUT):
            while not data.endswith(b"\n"):
                await anyio.wait_readable(self.peer_read)
                data += os.read(self.peer_read, 65536)
        return data

    def stop_reading(self) -> None:
        os.close(self.peer_read)
        self.peer_read = -1

    def close(self) -> None:
        for fd in (self.peer_read, self.peer_write):
            if fd >= 0:
                os.close(fd)
        self.peer_write = -1


async def test_write_side_broken_while_the_peer_talks_fails_the_connection():
    pipes = Pipes()
    answered = anyio.Event()

    async def main(cx: Any) -> None:
        sent = cx.send_request(simple("one"))
        assert b'"simple_method"' in await pipes.read_line()
        pipes.stop_reading()
        # Writes fail now (EPIPE); once one has, every later send raises.
        with anyio.fail_after(TIMEOUT), pytest.raises(acp.Error, match="write failed"):
            while True:
                cx.send_notification(acp.UntypedMessage("lost", {}))
                await anyio.lowlevel.checkpoint()
        # The peer talks on: on its next read the connection fails.
        pipes.write(b'{"jsonrpc":"2.0","method":"still/talking"}')
        answered.set()
        with anyio.fail_after(TIMEOUT):
            await sent

    try:
        with anyio.fail_after(TIMEOUT), pytest.raises(acp.Error) as caught:
            await echo_server().connect_with(pipes.transport(), main)
        assert caught.value.code == -32603
        assert "transport write failed" in caught.value.data
        assert answered.is_set()
    finally:
        pipes.close()


async def test_write_side_broken_then_eof_is_a_clean_end_with_answers_pending():
    """The peer stops reading, then its output ends: the peer is gone. A
    request we forwarded for it settles with the EOF error and its answer,
    which cannot be written, is dropped; on_close runs; no error."""
    pipes = Pipes()
    closed: list[int] = []
    answered = anyio.Event()

    async def ask(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        cx.send_request(acp.UntypedMessage("perm", {})).forward_response_to(responder)

    async def other(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond("nobody reads this")  # written before the next read: EPIPE
        answered.set()

    builder = (
        acp.UntypedRole.builder()
        .on_receive_request(ask, "ask")
        .on_receive_request(other, "other")
        .on_close(lambda: closed.append(1))
    )
    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                group.start_soon(builder.connect_to, pipes.transport())
                pipes.write(b'{"jsonrpc":"2.0","id":1,"method":"ask"}')
                assert b'"perm"' in await pipes.read_line()
                pipes.stop_reading()
                pipes.write(b'{"jsonrpc":"2.0","id":2,"method":"other"}')
                await answered.wait()
                # Its answer is flushed before the next read, and fails; then EOF.
                os.close(pipes.peer_write)
                pipes.peer_write = -1
        assert closed == [1]  # connect_to returned without error
    finally:
        pipes.close()


# --- handlers raising anything ------------------------------------------------------------


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def deep_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


try:
    ExceptionGroup_ = builtins.ExceptionGroup
except AttributeError:  # pragma: no cover - Python 3.10: anyio's backport
    from exceptiongroup import ExceptionGroup as ExceptionGroup_


def internal(details: str) -> dict[str, Any]:
    return {"code": -32603, "message": "Internal error", "data": {"details": details}}


# (name, what the handler raises, the error object answered)
EXCEPTIONS: list[tuple[str, Any, Any]] = [
    ("value_error", lambda: ValueError("bad value"), internal("ValueError: bad value")),
    ("empty_message", lambda: RuntimeError(), internal("RuntimeError")),
    ("str_raises", BadStr, internal("BadStr: <str() failed>")),
    (
        "long_message",
        lambda: ValueError("x" * 5000),
        internal(("ValueError: " + "x" * 5000)[:1000]),
    ),
    ("lone_surrogate_message", lambda: ValueError("\ud800"), "repr"),
    (
        "exception_group",
        lambda: ExceptionGroup_("several", [ValueError("a"), KeyError("b")]),
        internal("ExceptionGroup: several (2 sub-exceptions)"),
    ),
    ("timeout", lambda: TimeoutError("slow"), internal("TimeoutError: slow")),
    (
        "acp_error",
        lambda: acp.Error.auth_required({"hint": "login"}),
        {"code": -32000, "message": "Authentication required", "data": {"hint": "login"}},
    ),
    (
        "acp_error_custom_code",
        lambda: acp.Error(12345, "custom", [1, None]),
        {"code": 12345, "message": "custom", "data": [1, None]},
    ),
    # Out of the 32-bit range peers read codes in: -32603, the code kept in data.
    (
        "acp_error_huge_code",
        lambda: acp.Error(2**70, "huge", [1]),
        {"code": -32603, "message": "huge", "data": {"code": str(2**70), "data": [1]}},
    ),
    (
        "acp_error_opaque_data",
        lambda: acp.Error(1, "m", Opaque()),
        {"code": 1, "message": "m", "data": "Opaque()"},
    ),
    (
        "acp_error_repr_raises",
        lambda: acp.Error(1, "m", BadRepr()),
        {"code": 1, "message": "m", "data": "<unprintable BadRepr>"},
    ),
    (
        "acp_error_surrogate_data",
        lambda: acp.Error(1, "m", {"k": "\ud800"}),
        {"code": 1, "message": "m", "data": "{'k': '\\ud800'}"},
    ),
    (
        "acp_error_surrogate_message",
        lambda: acp.Error(1, "\ud800"),
        {"code": 1, "message": "\\ud800"},
    ),
    (
        "acp_error_deep_data",
        lambda: acp.Error(1, "m", deep_list(100_000)),
        {"code": 1, "message": "m", "data": "<unprintable list>"},
    ),
    (
        "acp_error_bytes_data",
        lambda: acp.Error(1, "m", b"\xff"),
        {"code": 1, "message": "m", "data": "/w=="},
    ),
]


@pytest.mark.parametrize(
    ("make", "expected"), [c[1:] for c in EXCEPTIONS], ids=[c[0] for c in EXCEPTIONS]
)
async def test_handler_exception_is_answered_and_the_connection_goes_on(make, expected, caplog):
    async def boom(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        raise make()

    async with serving(echo_server().on_receive_request(boom, "boom")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "boom"})
        reply = await peer.receive()
        if expected == "repr":  # the details cannot be encoded: their repr is sent
            assert reply["error"] == {
                "code": -32603,
                "message": "Internal error",
                "data": "{'details': 'ValueError: \\ud800'}",
            }
        else:
            assert reply == {"jsonrpc": "2.0", "id": 1, "error": expected}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "after"}})
        assert (await peer.receive())["result"] == {"result": "echo: after"}


async def test_a_result_too_deep_to_encode_is_answered_with_an_error():
    async def deep(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond(deep_list(100_000))

    async with serving(echo_server().on_receive_request(deep, "deep")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "deep"})
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32603,
                "message": "Internal error",
                "data": "failed to encode the result of `deep`",
            },
        }
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "after"}})
        assert (await peer.receive())["id"] == 2


async def test_handler_raising_after_answering_answers_once():
    async def both(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond("first")
        raise ValueError("after the answer")

    async with serving(echo_server().on_receive_request(both, "both")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "both"})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "x"}})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": "first"}
        assert (await peer.receive())["id"] == 2


async def test_notification_handler_exceptions_are_logged_and_the_connection_goes_on():
    async def boom(message: Any, cx: Any) -> None:
        raise BadStr()

    async with serving(echo_server().on_receive_notification(boom, "boom")) as peer:
        peer.send({"jsonrpc": "2.0", "method": "boom"})
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "x"}})
        assert (await peer.receive())["id"] == 2


class CustomBase(BaseException):
    pass


ABORTS = [
    ("keyboard_interrupt", KeyboardInterrupt, "KeyboardInterrupt"),
    ("system_exit", lambda: SystemExit(3), "SystemExit: 3"),
    ("generator_exit", GeneratorExit, "GeneratorExit"),
    ("custom_base_exception", lambda: CustomBase("why"), "CustomBase: why"),
]


@pytest.mark.parametrize("where", ["request", "suspended_request", "notification", "spawned"])
@pytest.mark.parametrize(("make", "details"), [a[1:] for a in ABORTS], ids=[a[0] for a in ABORTS])
async def test_base_exception_answers_then_stops_the_connection_and_is_raised_as_is(
    make, details, where
):
    async def request(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        if where == "suspended_request":
            await anyio.lowlevel.checkpoint()
        raise make()

    async def notification(message: Any, cx: Any) -> None:
        raise make()

    async def spawning(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        async def task() -> None:
            raise make()

        responder.respond("spawned")
        cx.spawn(task)

    builder = echo_server()
    if where == "notification":
        builder.on_receive_notification(notification, "boom")
    elif where == "spawned":
        builder.on_receive_request(spawning, "boom")
    else:
        builder.on_receive_request(request, "boom")
    ours, theirs = memory_pair()
    lines: list[bytes] = []

    async def peer_side() -> None:
        async with RawPeer(theirs) as peer:
            if where == "notification":
                peer.send({"jsonrpc": "2.0", "method": "boom"})
            else:
                peer.send({"jsonrpc": "2.0", "id": 1, "method": "boom"})
            # Read the stream to its end: what was answered before the stop.
            while True:
                try:
                    lines.append(await peer.receive_line())
                except EOFError:
                    break

    kind = type(make())
    async with anyio.create_task_group() as group:
        group.start_soon(peer_side)
        with anyio.fail_after(TIMEOUT), pytest.raises(kind) as caught:
            await builder.connect_to(ours)  # in this task: the exception is ours to catch
        assert type(caught.value) is kind  # as it is: no exception group
        if kind is SystemExit:
            assert caught.value.code == 3
    if where in ("request", "suspended_request"):
        assert [acp_line(line) for line in lines] == [
            {"jsonrpc": "2.0", "id": 1, "error": internal(details)}
        ]
    elif where == "spawned":
        assert [acp_line(line) for line in lines] == [
            {"jsonrpc": "2.0", "id": 1, "result": "spawned"}
        ]
    else:
        assert lines == []


def acp_line(line: bytes) -> Any:
    return orjson.loads(line)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_cancelled_error_raised_by_a_handler_is_a_handler_failure(anyio_backend):
    """A CancelledError the task did not receive (re-raised from an inner
    task) is the handler's failure: answered, and the connection goes on.
    It used to end the dispatch loop silently: the connection hung."""

    async def inner_cancelled(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        inner = asyncio.ensure_future(asyncio.sleep(10))
        await asyncio.sleep(0)
        inner.cancel()
        await inner  # raises CancelledError here, though we were not cancelled

    async with serving(echo_server().on_receive_request(inner_cancelled, "inner")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "inner"})
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": internal("CancelledError"),
        }
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "x"}})
        assert (await peer.receive())["id"] == 2


async def test_result_callback_raising_fails_the_connection_with_its_error():
    async def main(cx: Any) -> None:
        def callback(result: Any) -> None:
            raise ValueError("callback failed")

        cx.send_request(simple("x")).on_receiving_result(callback)
        await anyio.sleep_forever()

    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(echo_server().connect_to, theirs)
        with anyio.fail_after(TIMEOUT), pytest.raises(ValueError, match="callback failed"):
            await acp.UntypedRole.builder().connect_with(ours, main)
        group.cancel_scope.cancel()


# --- cancellation racing the answer ------------------------------------------------------


async def test_cancel_after_the_answer_was_routed_sends_nothing():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(simple("x"))
        request = await log.next()
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "done"})
        await barrier_from_peer(log)  # the answer has been routed
        sent.cancel()
        assert await log.until_mark(cx) == []  # no $/cancel_request
        with anyio.fail_after(TIMEOUT):
            assert await sent == "done"


async def test_cancel_before_the_answer_still_delivers_the_answer():
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(simple("x"))
        request = await log.next()
        sent.cancel()
        # The peer answered before it read the cancel: the answer wins.
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "finished anyway"})
        assert is_cancel(await log.next(), request["id"])
        with anyio.fail_after(TIMEOUT):
            assert await sent == "finished anyway"
        assert cx._table.outgoing_count == 0


async def test_answer_after_the_awaiter_gave_up_is_routed_and_discarded():
    """The awaiting task's scope is cancelled first: one cancel goes out; the
    answer the peer sent meanwhile is routed and discarded, and nothing is
    left behind. (Which of the two comes first in one loop iteration is the
    scheduler's choice: the random race test covers both orders.)"""
    async with facing_raw_peer() as (cx, peer, log):
        sent = cx.send_request(simple("x"))
        request = await log.next()
        with anyio.CancelScope() as scope:
            scope.cancel()
            await sent
        assert scope.cancelled_caught
        assert is_cancel(await log.next(), request["id"])
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "late"})
        await barrier_from_peer(log)
        assert cx._table.outgoing_count == 0
        assert log.cancels() == [request["id"]]


async def test_peer_cancel_racing_the_handler_answer():
    """$/cancel_request in the same read as its request, and after the
    answer: the first is seen by the handler, the second changes nothing."""
    seen: list[bool] = []

    async def check(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        cancellation = responder.cancellation()
        await anyio.lowlevel.checkpoint()
        seen.append(cancellation.is_cancelled())
        responder.respond("answered")

    async with serving(echo_server().on_receive_request(check, "check")) as peer:
        peer.channel.write(
            b'{"jsonrpc":"2.0","id":1,"method":"check"}\n'
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n'
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}\n'
        )
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": "answered"}
        peer.send({"jsonrpc": "2.0", "id": 2, "method": SIMPLE, "params": {"message": "x"}})
        assert (await peer.receive())["id"] == 2
    # Handlers run in arrival order: the cancel is read after the handler ends.
    assert seen == [False]


async def test_many_random_races_between_answers_and_cancels():
    """Requests answered after 0–2 checkpoints, cancelled (or abandoned by a
    timeout) after 0–2 checkpoints, many at once: every request settles
    exactly once, at most one cancel per id, never one for a request whose
    answer was already routed, and both tables end empty."""
    rng = random.Random(8)
    cancels_after_routing: list[int] = []

    async def slow_echo(
        message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any
    ) -> None:
        async def answer() -> None:
            for _ in range(message.params["delay"]):
                await anyio.lowlevel.checkpoint()
            if responder.cancellation().is_cancelled() and message.params["honour"]:
                responder.respond_with_error(acp.Error.request_cancelled())
            else:
                responder.respond(message.params["n"])

        cx.spawn(answer)

    server = acp.UntypedRole.builder().name("server").on_receive_request(slow_echo, "slow")
    cancel_log: list[Any] = []
    client = acp.UntypedRole.builder().name("client")
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(server.connect_to, ours)
        async with client.connect(theirs) as cx:
            send_cancel = cx._send_cancel

            def checked_send_cancel(request: Any) -> None:
                if request.settled:
                    cancels_after_routing.append(request.id)
                cancel_log.append(request.id)
                send_cancel(request)

            cx._send_cancel = checked_send_cancel
            outcomes: dict[int, Any] = {}

            async def one(n: int) -> None:
                sent = cx.send_request(
                    acp.UntypedMessage(
                        "slow", {"n": n, "delay": rng.randrange(3), "honour": rng.random() < 0.5}
                    )
                )
                mode = rng.choice(["await", "cancel", "timeout"])
                try:
                    if mode == "timeout":
                        with anyio.CancelScope() as scope:
                            for _ in range(rng.randrange(3)):
                                await anyio.lowlevel.checkpoint()
                            scope.cancel()
                            outcomes[n] = await sent
                        if scope.cancelled_caught:
                            outcomes.setdefault(n, "abandoned")
                        return
                    if mode == "cancel":
                        for _ in range(rng.randrange(3)):
                            await anyio.lowlevel.checkpoint()
                        sent.cancel()
                    outcomes[n] = await sent
                except acp.Error as error:
                    outcomes[n] = error.code

            async with anyio.create_task_group() as clients:
                for n in range(300):
                    clients.start_soon(one, n)
            with anyio.fail_after(TIMEOUT):
                assert (
                    await cx.send_request(
                        acp.UntypedMessage("slow", {"n": -1, "delay": 3, "honour": False})
                    )
                    == -1
                )
            assert sorted(outcomes) == list(range(300))
            assert all(o == n or o in ("abandoned", -32800) for n, o in outcomes.items())
            assert len(cancel_log) == len(set(cancel_log))
            assert cancels_after_routing == []
            assert cx._table.outgoing_count == 0
        group.cancel_scope.cancel()
