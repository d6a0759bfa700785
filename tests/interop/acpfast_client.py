"""Interop: the contract's *client* written with acp_fast.

``run_contract(agent_cmd)`` spawns an agent (any contract agent: the
TypeScript SDK's, the official Python SDK's, or acp_fast's own) with
``acp.Subprocess`` and runs the steps of peers/README.md over real pipes,
using acp_fast's low-level builder and the typed messages of
``acp_fast.schema.v1``. It returns a ``Report`` of what it saw, including the
raw wire lines of the cancellation steps, for the tests to assert on. A step
that fails or hangs raises (each is bounded), so a test shows where.

Run by hand: python acpfast_client.py [--backend trio] <agent argv...>
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import msgspec
import orjson

import acp_fast as acp
from acp_fast.schema import v1

STEP_TIMEOUT = 5.0
BIG_TIMEOUT = 10.0
INPUT_TEXT = "interop input\n"
BIG_SIZE = 10_000_000
FILES = {"/interop/input.txt": INPUT_TEXT, "/interop/big.txt": "x" * BIG_SIZE}
# Wire lines longer than this are not kept by the tap (the 10 MB answer).
TAP_LINE_LIMIT = 64 * 1024


# --- a wire tap ------------------------------------------------------------


class WireTap(acp.Transport):
    """Wraps a transport and records the NDJSON lines going each way."""

    def __init__(self, inner: acp.Transport) -> None:
        self.inner = inner
        self.sent: list[Any] = []
        self.received: list[Any] = []
        self._partial = {"sent": b"", "received": b""}
        self._changed = anyio.Event()

    @asynccontextmanager
    async def _open(self, backend: Any) -> AsyncIterator[Any]:
        async with self.inner._open(backend) as channel:
            write, receive = channel.write, channel.receive

            def tapped_write(data: bytes) -> None:
                self._record("sent", data)
                write(data)

            async def tapped_receive() -> bytes:
                data = await receive()
                self._record("received", data)
                return data

            # The connection looks these up on the channel for every call.
            channel.write = tapped_write  # type: ignore[method-assign]
            channel.receive = tapped_receive  # type: ignore[method-assign]
            yield channel

    def _record(self, direction: str, data: bytes) -> None:
        lines = (self._partial[direction] + data).split(b"\n")
        self._partial[direction] = lines.pop()
        if len(self._partial[direction]) > TAP_LINE_LIMIT:
            self._partial[direction] = b" " * TAP_LINE_LIMIT  # keep it "too long"
        log = self.sent if direction == "sent" else self.received
        for line in lines:
            if 0 < len(line) <= TAP_LINE_LIMIT:
                log.append(orjson.loads(line))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, direction: str, predicate: Callable[[Any], bool]) -> Any:
        """The first recorded line that matches (waits for it, bounded)."""
        log = self.sent if direction == "sent" else self.received
        with anyio.fail_after(STEP_TIMEOUT):
            while True:
                for line in log:
                    if predicate(line):
                        return line
                await self._changed.wait()


def is_cancel_for(request_id: Any) -> Callable[[Any], bool]:
    return lambda line: (
        line.get("method") == "$/cancel_request"
        and line.get("params", {}).get("requestId") == request_id
    )


def is_answer_to(request_id: Any) -> Callable[[Any], bool]:
    return lambda line: "method" not in line and line.get("id") == request_id


# --- the client --------------------------------------------------------------


@dataclass
class Turn:
    """What one prompt turn showed the client."""

    chunks: list[str] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    tool_updates: list[dict[str, Any]] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[dict[str, str]] = field(default_factory=list)
    stop_reason: str | None = None


@dataclass
class Report:
    agent_info: dict[str, Any] | None = None
    protocol_version: int | None = None
    session_id: str | None = None
    hello: Turn | None = None
    # Step 4a: cancel() then await: the peer's real answer.
    cancel_outcome: str | None = None  # "error" | "result"
    cancel_error: dict[str, Any] | None = None
    cancel_result: Any = None
    cancel_wire: dict[str, Any] = field(default_factory=dict)
    # Step 4b: the awaiting scope is cancelled ("dropping the future").
    drop_wire: dict[str, Any] = field(default_factory=dict)
    echo: Any = None
    wait: Turn | None = None
    big: Turn | None = None
    agent_returncode: int | None = None
    agent_stderr: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def client_builder(state: dict[str, Any]) -> acp.Builder[Any]:
    """The contract's client side; records into ``state["turn"]``."""
    builder = acp.Client.builder().name("interop-acp-fast-client")

    def turn() -> Turn:
        current: Turn = state["turn"]
        return current

    @builder.on_receive_notification(v1.SessionNotification)
    async def session_update(notification: v1.SessionNotification, cx: Any) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            if isinstance(update.content, v1.ContentBlockText):
                turn().chunks.append(update.content.text)
                waiter = state.get("chunk_waiter")
                if waiter is not None:
                    waiter.set()
        elif isinstance(update, v1.SessionUpdateToolCall | v1.SessionUpdateToolCallUpdate):
            tag = (
                "tool_call" if isinstance(update, v1.SessionUpdateToolCall) else "tool_call_update"
            )
            turn().tool_updates.append(
                {
                    "sessionUpdate": tag,
                    "toolCallId": update.tool_call_id,
                    "title": _value(update.title),
                    "kind": _value(update.kind),
                    "status": _value(update.status),
                }
            )

    @builder.on_receive_request(v1.RequestPermissionRequest)
    async def request_permission(
        request: v1.RequestPermissionRequest, responder: Any, cx: Any
    ) -> None:
        turn().permissions.append(
            {
                "toolCallId": request.tool_call.tool_call_id,
                "options": [
                    {"optionId": option.option_id, "kind": option.kind}
                    for option in request.options
                ],
            }
        )
        responder.respond(
            v1.RequestPermissionResponse(
                outcome=v1.RequestPermissionOutcomeSelected(option_id="allow")
            )
        )

    @builder.on_receive_request(v1.ReadTextFileRequest)
    async def read_text_file(request: v1.ReadTextFileRequest, responder: Any, cx: Any) -> None:
        turn().reads.append(request.path)
        content = FILES.get(request.path)
        if content is None:
            responder.respond_with_error(acp.Error.resource_not_found(request.path))
        else:
            responder.respond(v1.ReadTextFileResponse(content=content))

    @builder.on_receive_request(v1.WriteTextFileRequest)
    async def write_text_file(request: v1.WriteTextFileRequest, responder: Any, cx: Any) -> None:
        turn().writes.append({"path": request.path, "content": request.content})
        responder.respond(v1.WriteTextFileResponse())

    return builder


def _value(value: Any) -> Any:
    return None if value is msgspec.UNSET else value


def _text(text: str) -> list[Any]:
    return [v1.ContentBlockText(text=text)]


async def run_contract(agent_cmd: list[str], transport: acp.Transport | None = None) -> Report:
    """Spawn ``agent_cmd`` (or use ``transport``) and run every step of the contract."""
    report = Report()
    state: dict[str, Any] = {"turn": Turn()}
    agent = acp.Subprocess(agent_cmd, stderr=report.agent_stderr.append, grace_period=5.0)
    tap = WireTap(agent if transport is None else transport)

    async def main(cx: Any) -> None:
        # 1. initialize: awaited before anything else (the TS agent rejects
        # requests pipelined behind it).
        with anyio.fail_after(STEP_TIMEOUT):
            init: v1.InitializeResponse = await cx.send_request(
                v1.InitializeRequest(
                    protocol_version=1,
                    client_capabilities=v1.ClientCapabilities(
                        fs=v1.FileSystemCapabilities(read_text_file=True, write_text_file=True)
                    ),
                    client_info=v1.Implementation(
                        name="interop-acp-fast-client", version=acp.__version__
                    ),
                )
            )
        report.protocol_version = init.protocol_version
        info = init.agent_info
        report.agent_info = (
            msgspec.to_builtins(info) if isinstance(info, v1.Implementation) else None
        )

        # 2. session/new
        with anyio.fail_after(STEP_TIMEOUT):
            session: v1.NewSessionResponse = await cx.send_request(
                v1.NewSessionRequest(cwd="/interop", mcp_servers=[])
            )
        session_id = report.session_id = session.session_id

        # 3. "hello": streamed chunks, a tool call, a permission, fs calls.
        report.hello = state["turn"] = Turn()
        with anyio.fail_after(STEP_TIMEOUT):
            answer: v1.PromptResponse = await cx.send_request(
                v1.PromptRequest(session_id=session_id, prompt=_text("hello"))
            )
        report.hello.stop_reason = answer.stop_reason

        # 4a. $/cancel_request for a request that waits for it; keep awaiting
        # to get the peer's real answer.
        sent = cx.send_request(acp.UntypedMessage("_test/slow", {}))
        sent.cancel()
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                report.cancel_result = await sent
            report.cancel_outcome = "result"
        except acp.Error as error:
            report.cancel_outcome = "error"
            report.cancel_error = error.to_dict()
        report.cancel_wire = {
            "request": await tap.wait_for("sent", lambda line: line.get("id") == sent.id),
            "cancel": await tap.wait_for("sent", is_cancel_for(sent.id)),
            "answer": await tap.wait_for("received", is_answer_to(sent.id)),
        }
        report.cancel_wire["order"] = [
            line.get("method")
            for line in tap.sent
            if line.get("id") == sent.id or is_cancel_for(sent.id)(line)
        ]

        # 4b. Dropping: the awaiting scope is cancelled, which sends one
        # $/cancel_request (the answer, if any, is discarded).
        with anyio.CancelScope() as scope:
            dropped = cx.send_request(acp.UntypedMessage("_test/slow", {}))
            scope.cancel()
            await dropped
        report.drop_wire = {"cancel": await tap.wait_for("sent", is_cancel_for(dropped.id))}

        # 5. A round trip as a barrier.
        with anyio.fail_after(STEP_TIMEOUT):
            report.echo = await cx.send_request(
                acp.UntypedMessage("_test/echo", {"text": "barrier"})
            )

        # 6. "wait", ended by session/cancel once "waiting" arrived.
        report.wait = state["turn"] = Turn()
        waiting = state["chunk_waiter"] = anyio.Event()
        with anyio.fail_after(STEP_TIMEOUT):
            prompt = cx.send_request(v1.PromptRequest(session_id=session_id, prompt=_text("wait")))
            await waiting.wait()
            cx.send_notification(v1.CancelNotification(session_id=session_id))
            answer = await prompt
        state["chunk_waiter"] = None
        report.wait.stop_reason = answer.stop_reason

        # 7. "big": a 10 MB fs/read_text_file answer from us to the agent.
        report.big = state["turn"] = Turn()
        with anyio.fail_after(BIG_TIMEOUT):
            answer = await cx.send_request(
                v1.PromptRequest(session_id=session_id, prompt=_text("big"))
            )
        report.big.stop_reason = answer.stop_reason

    await client_builder(state).connect_with(tap, main)
    if transport is None:
        report.agent_returncode = agent.returncode
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="acp_fast interop client")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("agent", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if not args.agent:
        parser.error("give the agent's command line")
    report = anyio.run(run_contract, args.agent, backend=args.backend)
    print(report.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
