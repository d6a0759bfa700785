"""The stdio peers of the class-API rows of ``acp-fast bench``.

``python -m acp_fast._bench._peers AGENT [--backend B]`` serves one bench
agent on stdio, where AGENT is:

* ``raw``: no SDK at all: a blocking loop over the two pipes, one reused read
  buffer, orjson (the floor the SDKs are measured against);
* ``builder``: acp_fast's connection layer (handlers that answer inline);
* ``class``: acp_fast's class API, a ``BaseAgent`` subclass;
* ``official``: the official SDK's agent class (its ``Agent`` interface).

Every agent answers ``_bench/echo`` with its params, streams ``_bench/stream``
``n`` ``session/update`` agent_message_chunk notifications then answers,
answers ``_bench/slow`` only when cancelled (-32800), and runs a
``session/prompt`` until ``session/cancel`` (``stopReason: "cancelled"``).
The raw agent also serves ``_bench/ask``: it asks the client's permission,
cancels that request at once with ``$/cancel_request``, and answers with how
long the client took to answer the cancelled request (the client rows).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ("RawPipe", "main")

SESSION = "sess_bench"


class RawPipe:
    """NDJSON over two file descriptors, blocking, with one reused buffer."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._buffer = bytearray(1 << 20)
        self._rest = b""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view) :]

    def read_lines(self) -> list[bytes]:
        """The complete lines that arrived (blocks for at least one read); []
        at EOF."""
        while True:
            count = os.readv(self.read_fd, [self._buffer])
            if count == 0:
                return []
            data = self._rest + self._buffer[:count]
            lines = data.split(b"\n")
            self._rest = lines.pop()
            if lines:
                return lines


def _line(message: Any) -> bytes:
    return orjson.dumps(message) + b"\n"


def _result(request_id: Any, result: Any) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def _chunk(i: int) -> bytes:
    update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": f"token {i} "},
    }
    params = {"sessionId": SESSION, "update": update}
    return _line({"jsonrpc": "2.0", "method": "session/update", "params": params})


def serve_raw() -> None:
    """The floor agent: answers as it reads, no event loop."""
    pipe = RawPipe(0, 1)
    slow: set[Any] = set()
    prompts: dict[str, Any] = {}
    asking: dict[Any, tuple[Any, float]] = {}  # permission id -> (ask id, time sent)
    next_id = 0
    while True:
        lines = pipe.read_lines()
        if not lines:
            return
        out: list[bytes] = []
        for line in lines:
            message = orjson.loads(line)
            method = message.get("method")
            request_id = message.get("id")
            if method is None:  # a response: the client answered a permission request
                ask_id, sent = asking.pop(request_id, (None, 0.0))
                if ask_id is not None:
                    out.append(_result(ask_id, {"seconds": time.perf_counter() - sent}))
            elif method == "_bench/echo":
                out.append(_result(request_id, message.get("params")))
            elif method == "_bench/stream":
                out.extend(_chunk(i) for i in range(message["params"]["n"]))
                out.append(_result(request_id, {"sent": message["params"]["n"]}))
            elif method == "_bench/slow":
                slow.add(request_id)
            elif method == "$/cancel_request":
                cancelled = message["params"]["requestId"]
                if cancelled in slow:
                    slow.discard(cancelled)
                    error = {"code": -32800, "message": "Request cancelled"}
                    out.append(_line({"jsonrpc": "2.0", "id": cancelled, "error": error}))
            elif method == "session/prompt":
                prompts[message["params"]["sessionId"]] = request_id
            elif method == "session/cancel":
                prompt_id = prompts.pop(message["params"]["sessionId"], None)
                if prompt_id is not None:
                    out.append(_result(prompt_id, {"stopReason": "cancelled"}))
            elif method == "_bench/ask":
                next_id += 1
                params = {
                    "sessionId": SESSION,
                    "toolCall": {"toolCallId": "call-1"},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}],
                }
                pipe.write(
                    b"".join(out)
                    + _line(
                        {
                            "jsonrpc": "2.0",
                            "id": next_id,
                            "method": "session/request_permission",
                            "params": params,
                        }
                    )
                )
                out = []
                cancel = {"requestId": next_id}
                asking[next_id] = (request_id, time.perf_counter())
                out.append(
                    _line({"jsonrpc": "2.0", "method": "$/cancel_request", "params": cancel})
                )
            elif method == "initialize":
                out.append(_result(request_id, {"protocolVersion": 1}))
            elif method == "session/new":
                out.append(_result(request_id, {"sessionId": SESSION}))
            elif request_id is not None:
                error = {"code": -32601, "message": "Method not found"}
                out.append(_line({"jsonrpc": "2.0", "id": request_id, "error": error}))
        if out:
            pipe.write(b"".join(out))


def serve_builder(backend: str) -> None:
    import anyio

    import acp_fast as acp

    from ._fast import agent_builder

    builder = agent_builder()

    async def new_session(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        responder.respond({"sessionId": SESSION})

    prompts: dict[str, acp.Responder[Any]] = {}

    async def prompt(message: Any, responder: acp.Responder[Any], cx: Any) -> None:
        prompts[message.params["sessionId"]] = responder

    async def cancel(message: Any, cx: Any) -> None:
        responder = prompts.pop(message.params["sessionId"], None)
        if responder is not None:
            responder.respond({"stopReason": "cancelled"})

    builder.on_receive_request(new_session, "session/new")
    builder.on_receive_request(prompt, "session/prompt")
    builder.on_receive_notification(cancel, "session/cancel")
    anyio.run(builder.connect_to, acp.stdio(), backend=backend)


def serve_class(backend: str) -> None:
    import anyio

    import acp_fast as acp
    from acp_fast.schema import v1

    class BenchAgent(acp.BaseAgent):
        async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id=SESSION)

        async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
            await anyio.sleep_forever()  # until session/cancel: "cancelled"
            raise AssertionError("unreachable")

        async def ext_method(self, method: str, params: Any) -> Any:
            if method == "_bench/echo":
                return params
            if method == "_bench/stream":
                client = self.client
                for i in range(params["n"]):
                    await client.session_update(
                        params["sessionId"],
                        v1.SessionUpdateAgentMessageChunk(
                            content=v1.ContentBlockText(text=f"token {i} ")
                        ),
                    )
                return {"sent": params["n"]}
            if method == "_bench/slow":
                await anyio.sleep_forever()  # until $/cancel_request: -32800
            raise acp.Error.method_not_found(method)

    acp.run_agent(BenchAgent(), backend=backend)


def serve_official() -> None:
    import asyncio

    import acp as official

    from ._official import BenchAgent

    class OfficialAgent(BenchAgent):
        def __init__(self) -> None:
            super().__init__()
            self._turns: dict[str, asyncio.Event] = {}

        async def new_session(self, cwd: str, **_: Any) -> Any:
            return official.NewSessionResponse(session_id=SESSION)

        async def prompt(self, session_id: str, prompt: Any, **_: Any) -> Any:
            cancelled = self._turns[session_id] = asyncio.Event()
            await cancelled.wait()
            return official.PromptResponse(stop_reason="cancelled")

        async def cancel(self, session_id: str, **_: Any) -> None:
            turn = self._turns.pop(session_id, None)
            if turn is not None:
                turn.set()

        async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
            if method == "bench/slow":
                await asyncio.Event().wait()  # the SDK ignores $/cancel_request
            return await super().ext_method(method, params)

    agent: Any = OfficialAgent()
    asyncio.run(official.run_agent(agent))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_fast._bench._peers")
    parser.add_argument("agent", choices=("raw", "builder", "class", "official"))
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args(argv)
    if args.agent == "raw":
        serve_raw()
    elif args.agent == "builder":
        serve_builder(args.backend)
    elif args.agent == "class":
        serve_class(args.backend)
    else:
        serve_official()
    return 0


if __name__ == "__main__":
    sys.exit(main())
