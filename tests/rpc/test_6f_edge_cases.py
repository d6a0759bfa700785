"""docs/semantics.md §6.F: edge cases, scenarios #77–#82.

Each test is named ``test_s<N>_<scenario>`` after the checklist entry it
ports. "Building or parsing" a message in the Rust SDK maps to two things
here: what ``send_request``/``send_notification`` accept, and how a
connection treats such a line from its peer (§1.4).
"""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import msgspec
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair, socket_pair
from tests.support import SIMPLE, TIMEOUT, RawPeer, echo, echo_server, serving

pytestmark = pytest.mark.anyio

INVALID_REQUEST_LINE = (
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}'
)


def request_line(request_id: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": SIMPLE, "params": {"message": message}}


class Recorder:
    """Catch-all request and notification handlers that note what they see."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def install(self, builder: acp.Builder[Any]) -> acp.Builder[Any]:
        async def on_request(message: Any, responder: acp.Responder[Any], cx: Any) -> Any:
            if message.method == SIMPLE:
                return await echo(message, responder, cx)
            self.seen.append(f"request {message.method}")
            responder.respond(None)
            return None

        async def on_notification(message: Any, cx: Any) -> None:
            self.seen.append(f"notification {message.method}")

        return builder.on_receive_request(on_request).on_receive_notification(on_notification)


@pytest.mark.parametrize("scalar", [1, "text", True, 1.5])
async def test_s77_raw_jsonrpc_message_rejects_scalar_params(scalar: Any):
    recorder = Recorder()
    async with serving(recorder.install(acp.UntypedRole.builder())) as peer:
        # Parsing: a request or a notification with scalar params is invalid.
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "m", "params": scalar})
        assert await peer.receive_line() == INVALID_REQUEST_LINE
        peer.send({"jsonrpc": "2.0", "method": "n", "params": scalar})
        assert await peer.receive_line() == INVALID_REQUEST_LINE
        peer.send(request_line(2, "barrier"))
        assert (await peer.receive())["id"] == 2
    assert recorder.seen == []

    # Building: such a message is refused and nothing is written.
    ours, theirs = memory_pair()
    async with RawPeer(theirs) as peer:
        async with acp.UntypedRole.builder().connect(ours) as cx:
            with pytest.raises(TypeError, match="JSON object or array"):
                cx.send_notification(acp.UntypedMessage("n", scalar))
            sent = cx.send_request(acp.UntypedMessage("m", scalar))
            with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
                await sent
            assert caught.value.code == acp.ErrorCode.INTERNAL_ERROR
            assert "JSON object or array" in caught.value.data
            cx.send_notification(acp.UntypedMessage("last", {}))
        assert (await peer.receive())["method"] == "last"
        await peer.receive_eof()


async def test_s77_scalar_result_serializes_as_is():
    async def answer_one(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond(1)

    async with serving(acp.UntypedRole.builder().on_receive_request(answer_one, "m")) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "m"})
        assert await peer.receive_line() == b'{"jsonrpc":"2.0","id":1,"result":1}'


async def test_s78_raw_jsonrpc_message_rejects_conflicting_envelope_fields():
    recorder = Recorder()
    async with serving(recorder.install(acp.UntypedRole.builder())) as peer:
        # method together with result: call-shaped, so answered -32600 (id null).
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "m", "result": 1})
        assert await peer.receive_line() == INVALID_REQUEST_LINE
        # A notification carrying error: call-shaped, answered -32600.
        peer.send({"jsonrpc": "2.0", "method": "n", "error": {"code": 1, "message": "x"}})
        assert await peer.receive_line() == INVALID_REQUEST_LINE
        # result together with error: response-shaped, silently dropped.
        peer.send({"jsonrpc": "2.0", "id": 2, "result": 1, "error": {"code": 1, "message": "x"}})
        peer.send(request_line(3, "barrier"))
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"result": "echo: barrier"},
        }
    assert recorder.seen == []


class EmptyRequest(msgspec.Struct):
    METHOD: ClassVar[str] = "empty_request"


class OptionalParams(msgspec.Struct):
    METHOD: ClassVar[str] = "optional_params"
    name: str | None = None
    count: int = 0


async def test_s79_empty_request():
    seen: list[Any] = []

    async def handle(request: EmptyRequest, responder: acp.Responder[Any], cx: Any) -> None:
        seen.append(request)
        responder.respond("Got empty request")

    server = acp.UntypedRole.builder().on_receive_request(handle, EmptyRequest)
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group, RawPeer(theirs) as peer:
        group.start_soon(server.connect_to, ours)
        client_ours, client_theirs = memory_pair()
        async with RawPeer(client_theirs) as wire:
            async with acp.UntypedRole.builder().connect(client_ours) as cx:
                # What the client writes: no "params" key at all.
                sent = cx.send_request(acp.UntypedMessage("empty_request"))
                line = await wire.receive()
                assert line == {"jsonrpc": "2.0", "id": sent.id, "method": "empty_request"}
                # Relay it to the server and its answer back.
                peer.send(line)
                wire.send(await peer.receive_line())
                with anyio.fail_after(TIMEOUT):
                    assert await sent == "Got empty request"
        await peer.close_output()
    assert seen == [EmptyRequest()]


@pytest.mark.parametrize("params", ["{}", "null", "absent"])
async def test_s80_null_params(params: str):
    seen: list[OptionalParams] = []

    async def handle(request: OptionalParams, responder: acp.Responder[Any], cx: Any) -> None:
        seen.append(request)
        responder.respond({"name": request.name, "count": request.count})

    server = acp.UntypedRole.builder().on_receive_request(handle, OptionalParams)
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "optional_params"}
    if params != "absent":
        message["params"] = {} if params == "{}" else None
    async with serving(server) as peer:
        peer.send(message)
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"name": None, "count": 0},
        }
    assert seen == [OptionalParams()]


@pytest.mark.parametrize("link", ["memory", "socket"])
async def test_s81_server_shutdown(link: str):
    ours, theirs = memory_pair() if link == "memory" else socket_pair()
    parked = anyio.Event()
    keep: list[acp.Responder[Any]] = []

    async def park(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        keep.append(responder)
        parked.set()

    server = acp.UntypedRole.builder().on_receive_request(park, SIMPLE)
    outcomes: list[Any] = []

    async def main(cx: acp.ConnectionTo[Any]) -> str:
        try:
            outcomes.append(await cx.send_request(acp.UntypedMessage(SIMPLE, {"message": "x"})))
        except acp.Error as error:
            outcomes.append(error)
        return "finished"

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            server_scope = anyio.CancelScope()

            async def run_server() -> None:
                with server_scope:
                    await server.connect_to(ours)

            group.start_soon(run_server)
            client = anyio.Event()
            results: list[str] = []

            async def run_client() -> None:
                results.append(await acp.UntypedRole.builder().connect_with(theirs, main))
                client.set()

            group.start_soon(run_client)
            await parked.wait()
            server_scope.cancel()  # the server is aborted mid-request
            await client.wait()
    assert results == ["finished"]
    assert len(outcomes) == 1
    # Either outcome is acceptable; here it is the EOF failure.
    assert acp.is_incoming_transport_closed(outcomes[0])


@pytest.mark.parametrize("how", ["half-close", "drop"])
@pytest.mark.parametrize("link", ["memory", "socket"])
async def test_s82_client_disconnect(link: str, how: str):
    ours, theirs = memory_pair() if link == "memory" else socket_pair()
    outcome: list[Any] = []

    async def serve() -> None:
        try:
            await echo_server().connect_to(ours)
            outcome.append("ok")
        except acp.Error as error:
            outcome.append(error)

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            async with RawPeer(theirs) as peer:
                peer.channel.write(b'{"jsonrpc":"2.0","id":1,"method":"simple_method","para')
                if how == "half-close":
                    await peer.close_output()
                    await peer.channel.drain()
                    # The partial line is answered as a parse error, then EOF.
                    assert (await peer.receive())["error"]["code"] == acp.ErrorCode.PARSE_ERROR
                    await peer.receive_eof()
                else:
                    await peer.channel.drain()
            # Leaving RawPeer dropped the whole transport (both directions).
    # A peer that goes away is a clean end of the connection, whether it only
    # ended its output or dropped the transport (the answer to the partial
    # line then cannot be written, which is not an error by itself).
    assert outcome == ["ok"]
