"""An agent written for the official SDK, running on acp_fast.compat.

Only the imports changed (``import acp`` became ``import acp_fast.compat as
acp``, ``acp.schema`` became ``acp_fast.compat.schema``). docs/migration.md
ports it to the native class API step by step.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp_fast.compat as acp
from acp_fast.compat.schema import (
    AllowedOutcome,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)


class ShoutAgent:
    """Upper-cases a file of the client's, with the user's permission."""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=acp.PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"shout:{cwd}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        path = prompt[0].text
        await self.conn.session_update(
            session_id, acp.update_agent_message_text(f"Shouting {path}")
        )
        await self.conn.session_update(
            session_id, acp.start_tool_call("edit-1", f"Edit {path}", kind="edit", status="pending")
        )
        reply = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="edit-1"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        if not (isinstance(reply.outcome, AllowedOutcome) and reply.outcome.option_id == "allow"):
            await self.conn.session_update(
                session_id, acp.update_tool_call("edit-1", status="failed")
            )
            return PromptResponse(stop_reason="refusal")
        text = (await self.conn.read_text_file(session_id=session_id, path=path)).content
        await self.conn.write_text_file(session_id=session_id, path=path, content=text.upper())
        await self.conn.session_update(
            session_id,
            acp.update_tool_call(
                "edit-1",
                status="completed",
                content=[acp.tool_diff_content(path, text.upper(), text)],
            ),
        )
        return PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "shout/version":
            return {"version": 1}
        raise acp.RequestError.method_not_found(f"_{method}")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(ShoutAgent()))
