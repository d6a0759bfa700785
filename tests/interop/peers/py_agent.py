"""Interop peer: an ACP v1 *agent* built with the official Python SDK.

Uses ``agent-client-protocol`` 0.12.1 (``import acp``): a class whose methods the
SDK calls with keyword arguments, served on stdio by ``acp.run_agent``. It
implements the interop contract in README.md. stdout carries protocol traffic
only; logs go to stderr.

Run: python py_agent.py   (then talk ACP on its stdin/stdout)

The SDK ignores ``$/cancel_request`` (it logs "method not found" and keeps
going), so ``_test/slow`` simply answers ``{"finished": true}`` after 0.5 s.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from typing import Any

import acp
from acp import RequestError
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

log = logging.getLogger("py_agent")


class InteropAgent:
    """The contract's agent side.

    Deliberately *not* a subclass of ``acp.Agent``: that class is a Protocol
    whose unimplemented methods have empty bodies, so inheriting it would make
    e.g. ``session/load`` answer ``{"result": null}`` instead of -32601.
    """

    def __init__(self) -> None:
        self._conn: Any = None  # acp.agent.connection.AgentSideConnection
        # sessionId -> Event set by session/cancel. The SDK routes session/cancel
        # to cancel() but never touches the running prompt, so we wire it up.
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        # Called by the SDK with the handle used to call the client.
        self._conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(
                name="interop-py-agent", title="Interop Python agent", version=acp_version()
            ),
        )

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse:
        session_id = f"py-{uuid.uuid4()}"
        self._cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **_: Any) -> None:
        event = self._cancelled.get(session_id)
        if event is not None:
            event.set()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        if session_id not in self._cancelled:
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        first = next(
            (block.text for block in prompt if getattr(block, "type", None) == "text"), None
        )
        if first == "hello":
            return await self._hello(session_id)
        if first == "wait":
            return await self._wait(session_id)
        if first == "big":
            return await self._big(session_id)
        raise RequestError.invalid_params({"text": first})

    # -- prompt scenarios ---------------------------------------------------

    async def _chunk(self, session_id: str, text: str) -> None:
        # Awaiting session_update means the line is written before the next one.
        await self._conn.session_update(
            session_id=session_id, update=acp.update_agent_message_text(text)
        )

    async def _hello(self, session_id: str) -> PromptResponse:
        await self._chunk(session_id, "Hello")
        await self._chunk(session_id, " world")
        await self._conn.session_update(
            session_id=session_id,
            update=acp.start_tool_call("call-1", "Write file", kind="edit", status="pending"),
        )
        permission = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id="call-1", title="Write file", kind="edit", status="pending"
            ),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = permission.outcome
        # Anything but an explicit "allow" (reject, or "cancelled") is a refusal.
        if not (isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow"):
            await self._chunk(session_id, "rejected")
            return PromptResponse(stop_reason="end_turn")
        read = await self._conn.read_text_file(session_id=session_id, path="/interop/input.txt")
        await self._conn.write_text_file(
            session_id=session_id, path="/interop/output.txt", content=read.content.upper()
        )
        await self._conn.session_update(
            session_id=session_id, update=acp.update_tool_call("call-1", status="completed")
        )
        await self._chunk(session_id, "done")
        return PromptResponse(stop_reason="end_turn")

    async def _wait(self, session_id: str) -> PromptResponse:
        event = self._cancelled[session_id]
        event.clear()  # armed before "waiting" goes out, so no cancel is missed
        await self._chunk(session_id, "waiting")
        await event.wait()
        return PromptResponse(stop_reason="cancelled")

    async def _big(self, session_id: str) -> PromptResponse:
        read = await self._conn.read_text_file(session_id=session_id, path="/interop/big.txt")
        await self._chunk(session_id, f"len={len(read.content)}")
        return PromptResponse(stop_reason="end_turn")

    # -- extension methods --------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        # The SDK strips the leading underscore: "_test/slow" arrives as "test/slow".
        if method == "test/slow":
            await asyncio.sleep(0.5)
            return {"finished": True}
        if method == "test/echo":
            text = params.get("text")
            if not isinstance(text, str):
                raise RequestError.invalid_params({"text": text})
            return {"text": text}
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.info("ignoring extension notification _%s", method)


def acp_version() -> str:
    from importlib.metadata import version

    return version("agent-client-protocol")


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="[py_agent] %(levelname)s %(message)s"
    )
    asyncio.run(acp.run_agent(InteropAgent()))


if __name__ == "__main__":
    main()
