"""A test agent for the subprocess chain: ``python agent_script.py [asyncio|trio]``.

* ``initialize`` answers protocol version 1; ``session/new`` "chain-session";
* ``session/prompt`` "park" waits until cancelled and is answered -32800;
  any other prompt streams its text back as one agent text chunk and ends
  the turn;
* ``test/simple`` is echoed (a barrier);
* ``test/report`` answers what the agent saw: the ids of the prompts it
  parked and of every ``$/cancel_request`` it received, in order.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

import acp_fast as acp
from acp_fast.schema import v1

parked: list[Any] = []
cancels: list[Any] = []


def build() -> acp.Builder[Any]:
    agent = acp.Agent.builder().name("chain-agent")

    @agent.on_receive_request(v1.InitializeRequest)
    async def initialize(request: v1.InitializeRequest, responder: Any, cx: Any) -> None:
        responder.respond(v1.InitializeResponse(protocol_version=request.protocol_version))

    @agent.on_receive_request(v1.NewSessionRequest)
    async def new_session(request: v1.NewSessionRequest, responder: Any, cx: Any) -> None:
        responder.respond(v1.NewSessionResponse(session_id="chain-session"))

    @agent.on_receive_request(v1.PromptRequest)
    async def prompt(request: v1.PromptRequest, responder: acp.Responder[Any], cx: Any) -> None:
        text = "".join(b.text for b in request.prompt if isinstance(b, v1.ContentBlockText))
        if text == "park":
            parked.append(responder.id)

            async def wait_for_cancel() -> None:
                try:
                    await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
                except acp.Error as error:
                    responder.respond_with_error(error)

            cx.spawn(wait_for_cancel)
            return
        chunk = v1.SessionUpdateAgentMessageChunk(content=v1.ContentBlockText(text=text))
        cx.send_notification(v1.SessionNotification(session_id=request.session_id, update=chunk))
        responder.respond(v1.PromptResponse(stop_reason="end_turn"))

    @agent.on_receive_request("test/simple")
    async def echo(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond({"result": f"echo: {message.params['message']}"})

    @agent.on_receive_request("test/report")
    async def report(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond({"parked": parked, "cancels": cancels})

    @agent.on_receive_notification(v1.CancelRequestNotification)
    async def cancelled(notification: v1.CancelRequestNotification, cx: Any) -> None:
        cancels.append(notification.request_id)

    return agent


if __name__ == "__main__":
    anyio.run(
        build().connect_to, acp.stdio(), backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    )
