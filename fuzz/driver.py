"""Drive a connection's real dispatch code without an event loop.

Fuzzing wants thousands of inputs per second; an event loop per input costs
milliseconds. The dispatch code itself is synchronous until a handler
suspends (``ConnectionTo._receive`` returns a coroutine that the loop steps
once), and the handlers here never suspend. So ``dispatch()`` builds a real
``ConnectionTo`` over a recording channel, feeds its framer the chunks, runs
``_receive`` on each line and steps the coroutines to completion, exactly as
``ConnectionTo._read_loop`` does, and returns the bytes written.

``use_core("c" | "py")`` swaps the core the connection module uses, so that
both cores run the same input and can be compared byte for byte.

``check_output`` states what must hold for any input whatever: every line
written is a JSON-RPC response (or a batch of them), one at most per line
read, and every request was answered.

This reaches into ``ConnectionTo`` internals on purpose: the fuzz tests in
``tests/reliability/test_fuzz.py`` fail loudly if those change.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Coroutine, Iterator
from typing import Any

import acp_fast as acp
from acp_fast._async import connection as _connection
from acp_fast._async import dispatch as _dispatch
from acp_fast._async import inbound as _inbound
from acp_fast._async.connection import ConnectionTo
from acp_fast.schema import v1

__all__ = ("CAP", "ECHO", "FAIL", "check_output", "dispatch", "server_builder", "use_core")

CAP = 512  # a small size cap, so that fuzzed inputs reach the oversized path
ECHO = "echo"  # answers {"params": <its params>}
FAIL = "fail"  # raises ValueError: answered -32603

_CORE_NAMES = (
    "LineBuffer",
    "RequestTable",
    "classify",
    "is_valid_id",
    "params_head_of",
    "scan_head",
)


@contextlib.contextmanager
def use_core(tag: str) -> Iterator[None]:
    """Make the connection modules use core ``tag`` ("c" or "py") meanwhile."""
    modules = [
        importlib.import_module(f"acp_fast._core._{m}_{tag}")
        for m in ("framing", "messages", "requests")
    ]
    saved = [
        (user, name, getattr(user, name))
        for user in (_connection, _dispatch, _inbound)
        for name in _CORE_NAMES
        if hasattr(user, name)
    ]
    try:
        for user, name, _ in saved:
            setattr(user, name, next(getattr(m, name) for m in modules if hasattr(m, name)))
        yield
    finally:
        for user, name, value in saved:
            setattr(user, name, value)


async def _echo(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
    responder.respond({"params": message.params})


async def _fail(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
    raise ValueError("fuzz")


async def _new_session(
    request: v1.NewSessionRequest, responder: acp.Responder[Any], cx: Any
) -> None:
    responder.respond({"cwd": request.cwd})


async def _note(message: acp.UntypedMessage, cx: Any) -> None:
    _ = message.params  # decode them: undecodable params must not escape


def server_builder(max_message_size: int = CAP) -> acp.Builder[Any]:
    """The server every fuzz input is fed to (also used with real loops)."""
    return (
        acp.UntypedRole.builder()
        .name("fuzz")
        .max_message_size(max_message_size)
        .on_receive_request(_echo, ECHO)
        .on_receive_request(_fail, FAIL)
        .on_receive_request(_new_session, v1.NewSessionRequest)
        .on_receive_notification(_note, "note")
    )


class _RecordingChannel:
    def __init__(self) -> None:
        self.data = bytearray()
        self.pending = 0
        self.read_hint = 0

    def write(self, data: bytes) -> None:
        self.data += data


class _NoLoop:
    """The backend calls the dispatch path makes, with no event loop."""

    name = "none"

    def in_loop_thread(self) -> bool:
        return True

    def call_soon(self, callback: Any) -> None:
        callback()

    def call_soon_threadsafe(self, callback: Any) -> None:
        callback()

    def current_task(self) -> object:
        return None


def _run(pending: Coroutine[Any, Any, None] | None) -> None:
    if pending is None:
        return
    try:
        pending.send(None)
    except StopIteration:
        return
    pending.close()
    raise AssertionError("a handler suspended: the fuzz handlers never do")


def dispatch(
    chunks: list[bytes], *, max_message_size: int = CAP
) -> tuple[bytes, ConnectionTo[Any]]:
    """Feed ``chunks`` (one read each) to a fresh connection; return what it wrote."""
    builder = server_builder(max_message_size)
    channel = _RecordingChannel()
    conn: ConnectionTo[Any] = ConnectionTo(
        role=builder.role,
        channel=channel,  # type: ignore[arg-type]
        backend=_NoLoop(),  # type: ignore[arg-type]
        handlers=list(builder._handlers),
        close_callbacks=[],
        name="fuzz",
        max_message_size=max_message_size,
        reactive=True,
    )
    conn._sync = True  # as inside the dispatch loop: flushes are explicit
    framer = conn._framer
    for data in chunks:
        for line in framer.feed(data):
            _run(conn._receive(line))
        conn._flush()
    rest = framer.close()
    if rest is not None:
        _run(conn._receive(rest))
    conn._flush()
    return bytes(channel.data), conn


def _check_response(message: Any) -> None:
    assert type(message) is dict, message
    assert message.get("jsonrpc") == "2.0", message
    assert "id" in message and "method" not in message, message
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        error = message["error"]
        assert type(error) is dict and type(error.get("code")) is int, message
        assert type(error.get("message")) is str, message


def check_output(stream: bytes, output: bytes, conn: ConnectionTo[Any]) -> list[Any]:
    """Assert the invariants any input must keep; return the decoded replies."""
    lines_in = len(_inbound.LineBuffer(1 << 62).feed(stream + b"\n"))
    replies = []
    if output:
        assert output.endswith(b"\n"), output[-100:]
        for line in output[:-1].split(b"\n"):
            # Strict UTF-8 JSON: whatever came in, what goes out is valid.
            message = json.loads(line.decode("utf-8"))
            if type(message) is list:
                assert message, "an empty batch reply"
                for entry in message:
                    _check_response(entry)
            else:
                _check_response(message)
            replies.append(message)
    # Each line read is answered once at most (handlers here answer at once).
    assert len(replies) <= lines_in, (len(replies), lines_in)
    # Every request was answered: none is left in the registry.
    assert conn._table.incoming_count == 0
    assert conn._table.outgoing_count == 0
    return replies
