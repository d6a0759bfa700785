"""docs/semantics.md §6.E: error handling, scenarios #66–#76.

Each test is named ``test_s<N>_<scenario>`` after the checklist entry it
ports. Wire-level expectations are checked on the exact bytes where the
reference gives them, and on parsed JSON otherwise.

Deliberate difference from the Rust SDK exercised here: a handler exception
that is not an ``acp.Error`` answers -32603 with
``data = {"details": "<Type>: <message>"}`` and the connection lives on.
"""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import msgspec
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.support import SIMPLE, TIMEOUT, RawPeer, connected, echo, echo_server, serving, simple

pytestmark = pytest.mark.anyio


class SimpleRequest(msgspec.Struct):
    """A typed ``simple_method`` request: ``message`` is required."""

    METHOD: ClassVar[str] = SIMPLE
    message: str


class Settings(msgspec.Struct):
    """A typed notification whose ``level`` must be an integer."""

    METHOD: ClassVar[str] = "settings/changed"
    level: int


async def typed_echo(request: SimpleRequest, responder: acp.Responder[Any], cx: Any) -> None:
    responder.respond({"result": f"echo: {request.message}"})


def request_line(request_id: Any, params: Any, method: str = SIMPLE) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def expect_error(sent: Any, code: int) -> acp.Error:
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await sent
    assert caught.value.code == code
    return caught.value


async def test_s66_response_dispatch_handler_error_reaches_the_local_request_awaiter():
    async def intercept(dispatch: Any, cx: Any) -> Any:
        if isinstance(dispatch, acp.ResponseDispatch):
            raise acp.Error.internal_error("response interceptor failed")
        return acp.NOT_HANDLED

    client = acp.UntypedRole.builder().on_receive_dispatch(intercept)
    async with connected(echo_server(), client) as cx:
        error = await expect_error(cx.send_request(simple("hello")), acp.ErrorCode.INTERNAL_ERROR)
        assert error.data == "response interceptor failed"
        # The connection goes on: a second request meets the same interceptor.
        error = await expect_error(cx.send_request(simple("again")), acp.ErrorCode.INTERNAL_ERROR)
        assert error.data == "response interceptor failed"


async def test_s67_invalid_json():
    async with serving(echo_server()) as peer:
        peer.send('{"method": "test", "id": 1, INVALID}')
        assert await peer.receive_line() == (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error",'
            b'"data":{"line":"{\\"method\\": \\"test\\", \\"id\\": 1, INVALID}"}}}'
        )
        # The connection stays up.
        peer.send(request_line(2, {"message": "still here"}))
        assert (await peer.receive())["result"] == {"result": "echo: still here"}


async def test_s68_incomplete_line():
    ours, theirs = memory_pair()
    done: list[str] = []

    async def serve() -> None:
        await echo_server().connect_to(ours)
        done.append("ok")

    async with anyio.create_task_group() as group, RawPeer(theirs) as peer:
        group.start_soon(serve)
        peer.channel.write(b'{"jsonrpc":"2.0","id":1,"method":"simple_method","params":{"mes')
        await peer.close_output()  # EOF with no newline
        # The partial text is handled as a line: a parse error, then EOF.
        reply = await peer.receive()
        assert reply["id"] is None and reply["error"]["code"] == acp.ErrorCode.PARSE_ERROR
        await peer.receive_eof()
    assert done == ["ok"]


async def test_s69_malformed_standalone_response_is_ignored():
    ours, theirs = memory_pair()
    done: list[str] = []

    async def serve() -> None:
        await echo_server().connect_to(ours)
        done.append("ok")

    async with anyio.create_task_group() as group, RawPeer(theirs) as peer:
        group.start_soon(serve)
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 99,
                "result": None,
                "error": {"code": -32603, "message": "Internal error"},
            }
        )
        peer.send(request_line(41, {"message": "hello"}))
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":41,"result":{"result":"echo: hello"}}'
        )
        await peer.close_output()
        await peer.receive_eof()
    assert done == ["ok"]


async def test_s70_unknown_method():
    async with connected(acp.UntypedRole.builder()) as cx:
        error = await expect_error(
            cx.send_request(acp.UntypedMessage("unknown/method", {})),
            acp.ErrorCode.METHOD_NOT_FOUND,
        )
        assert error.data == "unknown/method"


async def test_s71_handler_returns_error():
    async def fail(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond_with_error(acp.Error.internal_error())

    async with connected(acp.UntypedRole.builder().on_receive_request(fail, SIMPLE)) as cx:
        error = await expect_error(cx.send_request(simple("x")), acp.ErrorCode.INTERNAL_ERROR)
        assert (error.message, error.data) == ("Internal error", None)


async def test_s71_handler_raising_error_answers_it():
    # Python form of a handler returning Err: raising acp.Error answers it.
    async def fail(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        raise acp.Error(-32099, "custom failure", {"why": "because"})

    async with connected(acp.UntypedRole.builder().on_receive_request(fail, SIMPLE)) as cx:
        error = await expect_error(cx.send_request(simple("x")), -32099)
        assert (error.message, error.data) == ("custom failure", {"why": "because"})


async def test_s71_handler_raising_other_exception_answers_internal_error():
    # acp_fast difference: a non-acp.Error exception answers -32603 with its
    # type and message in data.details; the connection lives on.
    async def fail(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
        if message.params["message"] == "boom":
            raise ValueError("bad value")
        return await echo(message, responder, cx)

    async with connected(acp.UntypedRole.builder().on_receive_request(fail, SIMPLE)) as cx:
        error = await expect_error(cx.send_request(simple("boom")), acp.ErrorCode.INTERNAL_ERROR)
        assert error.data == {"details": "ValueError: bad value"}
        with anyio.fail_after(TIMEOUT):
            assert await cx.send_request(simple("after")) == {"result": "echo: after"}


async def test_s72_missing_required_params():
    async def reject(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond_with_error(acp.Error.invalid_params())

    async with connected(acp.UntypedRole.builder().on_receive_request(reject, SIMPLE)) as cx:
        error = await expect_error(
            cx.send_request(acp.UntypedMessage(SIMPLE)), acp.ErrorCode.INVALID_PARAMS
        )
        assert error.message == "Invalid params"


async def test_s73_invalid_params_keeps_connection_alive():
    server = acp.UntypedRole.builder().on_receive_request(typed_echo, SimpleRequest)
    async with serving(server) as peer:
        peer.send(request_line(1, {"wrong_field": "hello"}))
        reply = await peer.receive()
        assert reply["id"] == 1 and reply["error"]["code"] == acp.ErrorCode.INVALID_PARAMS
        peer.send(request_line(2, {"message": "hello"}))
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"result": "echo: hello"},
        }


async def test_s74_bad_request_params_return_invalid_params_and_connection_stays_alive():
    server = acp.UntypedRole.builder().on_receive_request(typed_echo, SimpleRequest)
    async with serving(server) as peer:
        peer.send(request_line(3, {"content": "hello"}))
        reply = await peer.receive()
        assert set(reply) == {"jsonrpc", "id", "error"}
        assert (reply["jsonrpc"], reply["id"]) == ("2.0", 3)
        error = reply["error"]
        assert (error["code"], error["message"]) == (-32602, "Invalid params")
        # data.error is the decoder's text: match the structure, not the wording.
        data = error["data"]
        assert set(data) == {"error", "json", "phase"}
        assert isinstance(data["error"], str) and "message" in data["error"]
        assert data["json"] == {"content": "hello"}
        assert data["phase"] == "deserialization"
        peer.send(request_line(4, {"message": "hello"}))
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":4,"result":{"result":"echo: hello"}}'
        )


async def test_s75_notification_errors_are_ignored_and_connection_stays_alive():
    seen: list[Any] = []

    async def on_settings(notification: Settings, cx: Any) -> None:
        seen.append(notification.level)

    async def failing(message: acp.UntypedMessage, cx: Any) -> None:
        seen.append(message.method)
        raise acp.Error.internal_error("notification handler failed")

    async def crashing(message: acp.UntypedMessage, cx: Any) -> None:
        seen.append(message.method)
        raise RuntimeError("not an acp.Error")

    server = (
        echo_server()
        .on_receive_notification(on_settings, Settings)
        .on_receive_notification(failing, "failing/notification")
        .on_receive_notification(crashing, "crashing/notification")
    )
    async with serving(server) as peer:
        peer.send(
            {"jsonrpc": "2.0", "method": "settings/changed", "params": {"level": "not a number"}}
        )
        peer.send({"jsonrpc": "2.0", "method": "failing/notification", "params": {}})
        peer.send({"jsonrpc": "2.0", "method": "crashing/notification", "params": {}})
        peer.send(request_line(10, {"message": "hello"}))
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":10,"result":{"result":"echo: hello"}}'
        )
    # The bad params never reached the handler; the failing handlers ran.
    assert seen == ["failing/notification", "crashing/notification"]


async def test_s76_dispatch_handler_can_ignore_notification_and_connection_stays_alive():
    seen: list[str] = []

    async def catch_all(dispatch: Any, cx: Any) -> Any:
        if isinstance(dispatch, acp.NotificationDispatch):
            seen.append(dispatch.message.method)
            return None  # accepted, and ignored
        return acp.NOT_HANDLED

    server = (
        acp.UntypedRole.builder().on_receive_dispatch(catch_all).on_receive_request(echo, SIMPLE)
    )
    async with serving(server) as peer:
        peer.send({"jsonrpc": "2.0", "method": "unknown/notification", "params": {}})
        peer.send(request_line(11, {"message": "hello"}))
        assert (
            await peer.receive_line()
            == b'{"jsonrpc":"2.0","id":11,"result":{"result":"echo: hello"}}'
        )
    assert seen == ["unknown/notification"]
