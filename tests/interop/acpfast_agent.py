"""Interop peer: the contract's *agent* written with acp_fast.

Built with acp_fast's low-level builder and the typed messages of
``acp_fast.schema.v1``, served on stdio with ``acp.stdio(protect_stdout=True)``.
It implements the contract of peers/README.md, so the reference SDKs' client
peers (``peers/ts_client.mjs``, ``peers/py_client.py``) can drive it exactly as
they drive their own agents.

Run: python acpfast_agent.py [--backend asyncio|trio]

Handlers run in the connection's dispatch loop, so everything that waits for
the client (a prompt turn, ``_test/slow``) runs in a task of its own
(``cx.spawn``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from typing import Any

import anyio

import acp_fast as acp
from acp_fast.schema import v1

AGENT_NAME = "interop-acp-fast-agent"

log = logging.getLogger("acpfast_agent")


class Session:
    """One session: the waiter of a parked "wait" prompt, if any."""

    def __init__(self) -> None:
        self.cancelled: anyio.Event | None = None


def build() -> acp.Builder[Any]:
    """The contract's agent as a connection builder."""
    builder = acp.Agent.builder().name(AGENT_NAME)
    sessions: dict[str, Session] = {}

    @builder.on_receive_request(v1.InitializeRequest)
    async def initialize(request: v1.InitializeRequest, responder: Any, cx: Any) -> None:
        responder.respond(
            v1.InitializeResponse(
                protocol_version=1,
                agent_capabilities=v1.AgentCapabilities(),
                agent_info=v1.Implementation(
                    name=AGENT_NAME, title="Interop acp_fast agent", version=acp.__version__
                ),
            )
        )

    @builder.on_receive_request(v1.NewSessionRequest)
    async def new_session(request: v1.NewSessionRequest, responder: Any, cx: Any) -> None:
        session_id = f"acpfast-{uuid.uuid4()}"
        sessions[session_id] = Session()
        responder.respond(v1.NewSessionResponse(session_id=session_id))

    @builder.on_receive_notification(v1.CancelNotification)
    async def cancel(notification: v1.CancelNotification, cx: Any) -> None:
        session = sessions.get(notification.session_id)
        if session is not None and session.cancelled is not None:
            session.cancelled.set()

    @builder.on_receive_request(v1.PromptRequest)
    async def prompt(request: v1.PromptRequest, responder: Any, cx: Any) -> None:
        session = sessions.get(request.session_id)
        if session is None:
            responder.respond_with_error(
                acp.Error(-32002, "Resource not found", {"sessionId": request.session_id})
            )
            return
        first = next(
            (block.text for block in request.prompt if isinstance(block, v1.ContentBlockText)),
            None,
        )
        turns = {"hello": hello, "wait": wait, "big": big}
        turn = turns.get(first or "")
        if turn is None:
            responder.respond_with_error(acp.Error.invalid_params({"text": first}))
            return

        async def run() -> None:
            # A failure answers the prompt with it instead of failing the connection.
            try:
                stop_reason = await turn(cx, request.session_id, session, responder)
            except acp.Error as error:
                responder.respond_with_error(error)
            else:
                responder.respond(v1.PromptResponse(stop_reason=stop_reason))

        cx.spawn(run)  # it awaits the client: never inside the dispatch loop

    @builder.on_receive_request("_test/slow")
    async def slow(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        async def run() -> None:
            # Never answers on its own: only a $/cancel_request ends it, with -32800.
            try:
                await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
            except acp.Error as error:
                log.info("_test/slow %r cancelled", responder.id)
                responder.respond_with_error(error)

        cx.spawn(run)

    @builder.on_receive_request("_test/echo")
    async def echo(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        text = message.params.get("text") if isinstance(message.params, dict) else None
        if not isinstance(text, str):
            responder.respond_with_error(acp.Error.invalid_params(message.params))
            return
        responder.respond({"text": text})

    return builder


def chunk(cx: Any, session_id: str, text: str) -> None:
    cx.send_notification(
        v1.SessionNotification(
            session_id=session_id,
            update=v1.SessionUpdateAgentMessageChunk(content=v1.ContentBlockText(text=text)),
        )
    )


async def hello(cx: Any, session_id: str, session: Session, responder: Any) -> v1.StopReason:
    # Every send goes through one FIFO: the wire order is the order of these calls.
    chunk(cx, session_id, "Hello")
    chunk(cx, session_id, " world")
    cx.send_notification(
        v1.SessionNotification(
            session_id=session_id,
            update=v1.SessionUpdateToolCall(
                tool_call_id="call-1", title="Write file", kind="edit", status="pending"
            ),
        )
    )
    permission: v1.RequestPermissionResponse = await cx.send_request(
        v1.RequestPermissionRequest(
            session_id=session_id,
            tool_call=v1.ToolCallUpdate(
                tool_call_id="call-1", title="Write file", kind="edit", status="pending"
            ),
            options=[
                v1.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                v1.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
    )
    outcome = permission.outcome
    # Anything but an explicit "allow" (reject, or "cancelled") is a refusal.
    if not (
        isinstance(outcome, v1.RequestPermissionOutcomeSelected) and outcome.option_id == "allow"
    ):
        chunk(cx, session_id, "rejected")
        return "end_turn"
    read: v1.ReadTextFileResponse = await cx.send_request(
        v1.ReadTextFileRequest(session_id=session_id, path="/interop/input.txt")
    )
    await cx.send_request(
        v1.WriteTextFileRequest(
            session_id=session_id, path="/interop/output.txt", content=read.content.upper()
        )
    )
    cx.send_notification(
        v1.SessionNotification(
            session_id=session_id,
            update=v1.SessionUpdateToolCallUpdate(tool_call_id="call-1", status="completed"),
        )
    )
    chunk(cx, session_id, "done")
    return "end_turn"


async def wait(cx: Any, session_id: str, session: Session, responder: Any) -> v1.StopReason:
    # Armed before "waiting" goes out, so a session/cancel cannot be missed. A
    # $/cancel_request for the prompt itself ends the wait too. Either way the
    # answer is a normal "cancelled" result, never an error.
    cancelled = session.cancelled = anyio.Event()
    try:
        chunk(cx, session_id, "waiting")
        async with anyio.create_task_group() as group:

            async def on_cancel_request() -> None:
                await responder.cancellation().cancelled()
                group.cancel_scope.cancel()

            group.start_soon(on_cancel_request)
            await cancelled.wait()
            group.cancel_scope.cancel()
    finally:
        session.cancelled = None
    return "cancelled"


async def big(cx: Any, session_id: str, session: Session, responder: Any) -> v1.StopReason:
    read: v1.ReadTextFileResponse = await cx.send_request(
        v1.ReadTextFileRequest(session_id=session_id, path="/interop/big.txt")
    )
    chunk(cx, session_id, f"len={len(read.content)}")
    return "end_turn"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="[acpfast_agent] %(levelname)s %(message)s"
    )
    # protect_stdout: a stray print() in this process lands on stderr, never
    # in the protocol stream.
    anyio.run(build().connect_to, acp.stdio(protect_stdout=True), backend=args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
