"""The example agent: ``acp-fast example-agent`` (ACP v1 on stdio).

Any ACP client can launch it. It shows what an agent written with acp_fast
looks like:

* a prompt streams its answer as ``agent_message_chunk`` updates;
* it proposes a tool call (saving a note), asks the user's permission, and if
  allowed writes the file through the client (``fs/write_text_file``) when the
  client can, reporting the tool call's progress;
* a prompt starting with ``/wait`` keeps streaming until the client sends
  ``session/cancel`` for the session, and then answers
  ``stopReason: "cancelled"`` (the SDK cancels the running turn);
* the extension request ``_example/slow`` runs until the client sends
  ``$/cancel_request`` for it, and is answered -32800 (the SDK stops it).
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

import anyio
from msgspec import UNSET

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1

__all__ = ("ExampleAgent", "run_example_agent")


class ExampleAgent(acp.BaseAgent):
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._capabilities = v1.ClientCapabilities()
        self._cwd: dict[str, str] = {}  # session id -> its working directory

    async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
        if request.client_capabilities is not UNSET:
            self._capabilities = request.client_capabilities
        return v1.InitializeResponse(
            protocol_version=1,
            agent_capabilities=v1.AgentCapabilities(load_session=False),
            agent_info=v1.Implementation(name="acp-fast-example-agent", version=acp.__version__),
        )

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        if not os.path.isabs(request.cwd):
            raise acp.Error.invalid_params({"cwd": request.cwd, "reason": "must be absolute"})
        session = f"example-{next(self._ids)}"
        self._cwd[session] = request.cwd
        return v1.NewSessionResponse(session_id=session)

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        session = request.session_id
        if session not in self._cwd:
            # Never streamed to, never answered as a turn: there is no such session.
            raise acp.Error.invalid_params({"sessionId": session, "reason": "unknown session"})
        text = " ".join(b.text for b in request.prompt if isinstance(b, v1.ContentBlockText))
        if text.startswith("/wait"):
            for n in itertools.count(1):  # until session/cancel stops this turn
                await self.client.session_update(session, h.agent_text(f"working ({n})... "))
                await anyio.sleep(0.05)
        for word in f"You said: {text}".split():
            await self.client.session_update(session, h.agent_text(word + " "))
        await self._save_note(session, text)
        return v1.PromptResponse(stop_reason="end_turn")

    async def _save_note(self, session: str, text: str) -> None:
        # The protocol's paths are absolute: the note goes under the session's cwd.
        path = os.path.join(self._cwd[session], "notes", f"{session}.txt")
        await self.client.session_update(
            session,
            h.tool_call("note-1", f"Save the prompt to {path}", kind="edit", locations=[path]),
        )
        reply = await self.client.request_permission(
            session,
            h.tool_call_ref("note-1", title=f"Save the prompt to {path}"),
            h.allow_or_reject(),
        )
        if h.selected_option(reply) != "allow":
            await self.client.session_update(session, h.tool_call_update("note-1", status="failed"))
            return
        fs = self._capabilities.fs
        if fs is not UNSET and fs.write_text_file is True:
            await self.client.write_text_file(session, path, text + "\n")
        await self.client.session_update(
            session,
            h.tool_call_update("note-1", status="completed", content=[h.diff(path, text + "\n")]),
        )

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_example/slow":
            await anyio.sleep_forever()  # stopped by $/cancel_request: -32800
        raise acp.Error.method_not_found(method)


def run_example_agent(backend: str = "asyncio") -> int:
    """Serve the example agent on stdio; 1 when the connection failed (a
    write that failed, say: docs/semantics.md §2.7)."""
    try:
        acp.run_agent(ExampleAgent(), backend=backend)
    except acp.Error as exc:
        print(f"acp-fast example-agent: {exc}", file=sys.stderr)
        return 1
    return 0
