"""The agent the remote-transport tests serve, and a client recording what it sees.

Prompts (the text of the first block):

* ``many N``: N ``agent_message_chunk`` updates ("0 ", "1 ", ...), then ``end_turn``;
* ``wait``: updates until ``session/cancel`` stops the turn (``cancelled``);
* ``ask``: asks the client for permission, answers ``end_turn`` when allowed.

Extension requests: ``_t/slow`` runs until ``$/cancel_request`` (then -32800);
``_t/client_cancel`` sends the client ``_t/hang``, cancels it, and answers
the error code the client replied with; ``_t/echo`` answers its params.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1


class RemoteTestAgent(acp.BaseAgent):
    def __init__(self) -> None:
        self._ids = itertools.count(1)

    async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
        return v1.InitializeResponse(protocol_version=1)

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id=f"s-{next(self._ids)}")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        session = request.session_id
        block = request.prompt[0]
        text = block.text if isinstance(block, v1.ContentBlockText) else ""
        command, _, argument = text.partition(" ")
        if command == "many":
            for n in range(int(argument)):
                await self.client.session_update(session, h.agent_text(f"{n} "))
        elif command == "wait":
            for n in itertools.count():
                await self.client.session_update(session, h.agent_text(f"{n} "))
                await anyio.sleep(0.01)
        elif command == "ask":
            reply = await self.client.request_permission(
                session, h.tool_call_ref("t-1", title="Do it"), h.allow_or_reject()
            )
            if h.selected_option(reply) != "allow":
                return v1.PromptResponse(stop_reason="refusal")
        return v1.PromptResponse(stop_reason="end_turn")

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_t/echo":
            return params
        if method == "_t/slow":
            await anyio.sleep_forever()
        if method == "_t/client_cancel":
            sent = self.client.send_request(acp.UntypedMessage("_t/hang", {}))
            await anyio.sleep(0.05)
            sent.cancel()
            try:
                await sent
            except acp.Error as err:
                return {"code": int(err.code)}
            return {"code": None}
        raise acp.Error.method_not_found(method)


class RecordingClient(acp.BaseClient):
    """Records updates; allows every permission; ``_t/hang`` waits for cancellation."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.hang_cancelled = anyio.Event()
        self.updated = anyio.Event()  # set once an update arrived

    async def session_update(self, notification: v1.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk) and isinstance(
            update.content, v1.ContentBlockText
        ):
            self.updates.append(update.content.text)
            self.updated.set()

    async def request_permission(
        self, request: v1.RequestPermissionRequest
    ) -> v1.RequestPermissionResponse:
        return h.permission_selected("allow")

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_t/hang":
            try:
                await anyio.sleep_forever()
            finally:
                self.hang_cancelled.set()
        raise acp.Error.method_not_found(method)


if __name__ == "__main__":  # the same agent on stdio, for the bridge tests
    anyio.run(acp.serve_agent, RemoteTestAgent())
