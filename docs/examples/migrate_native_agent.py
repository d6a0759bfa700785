"""The agent of migrate_compat_agent.py, ported to acp_fast's class API.

Handlers take the typed request and return the typed response; the client is
``self.client``; helpers come from ``acp_fast.helpers``. See docs/migration.md.
"""

from __future__ import annotations

import sys
from typing import Any

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1


class ShoutAgent(acp.BaseAgent):
    """Upper-cases a file of the client's, with the user's permission."""

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id=f"shout:{request.cwd}")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        sid = request.session_id
        block = request.prompt[0]
        assert isinstance(block, v1.ContentBlockText)
        path = block.text
        await self.client.session_update(sid, h.agent_text(f"Shouting {path}"))
        await self.client.session_update(
            sid, h.tool_call("edit-1", f"Edit {path}", kind="edit", status="pending")
        )
        reply = await self.client.request_permission(
            sid, h.tool_call_ref("edit-1"), h.allow_or_reject()
        )
        if h.selected_option(reply) != "allow":
            await self.client.session_update(sid, h.tool_call_update("edit-1", status="failed"))
            return v1.PromptResponse(stop_reason="refusal")
        text = await self.client.read_text_file(sid, path)
        await self.client.write_text_file(sid, path, text.upper())
        await self.client.session_update(
            sid,
            h.tool_call_update(
                "edit-1", status="completed", content=[h.diff(path, text.upper(), text)]
            ),
        )
        return v1.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_shout/version":
            return {"version": 1}
        raise acp.Error.method_not_found(method)


if __name__ == "__main__":
    acp.run_agent(ShoutAgent(), backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
