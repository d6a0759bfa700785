"""The example proxy: ``acp-fast example-proxy`` (ACP v1, under a conductor).

A proxy sits between a client and an agent inside a conductor's chain::

    acp-fast conductor --proxy "acp-fast example-proxy" --agent "acp-fast example-agent"

This one shows the three things a proxy usually does:

* **rewrite on the way in**: with ``--prompt-prefix TEXT`` every text block of
  a ``session/prompt`` gets TEXT in front before it goes on to the agent;
* **transform on the way out**: the agent's text chunks (``session/update``,
  ``agent_message_chunk``) reach the client with ``--chunk-prefix`` (``>``
  by default) in front, like the reference SDK's arrow proxy;
* **observe**: prompts, transformed chunks and cancellations are logged to
  stderr (the conductor passes a proxy's stderr through).

Everything else, and the forwarding itself, is the default of ``acp.Proxy``
(docs/semantics.md §5.6): requests go on one hop under a new id, so a
cancelled prompt is cancelled at the agent with the agent's own id.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

import acp_fast as acp
from acp_fast.schema import v1

__all__ = ("build", "main", "run_example_proxy")


def log_to_stderr(text: str) -> None:
    print(f"[example-proxy] {text}", file=sys.stderr, flush=True)


def build(
    *,
    prompt_prefix: str = "",
    chunk_prefix: str = ">",
    log: Callable[[str], None] = log_to_stderr,
) -> acp.Builder[Any]:
    """The example proxy's connection builder (serve it with ``connect_to``)."""
    builder = acp.Proxy.builder().name("example-proxy")

    @builder.on_receive_request(v1.PromptRequest, peer=acp.Client)
    async def prompt(
        request: v1.PromptRequest, responder: acp.Responder[Any], cx: acp.ConnectionTo[Any]
    ) -> Any:
        text = "".join(b.text for b in request.prompt if isinstance(b, v1.ContentBlockText))
        log(f"prompt {responder.id!r} in session {request.session_id}: {text!r}")
        if not prompt_prefix:
            # Unchanged: the default forwarding sends the original bytes on.
            return acp.NOT_HANDLED
        rewritten = msgspec.structs.replace(
            request,
            prompt=[
                msgspec.structs.replace(block, text=prompt_prefix + block.text)
                if isinstance(block, v1.ContentBlockText)
                else block
                for block in request.prompt
            ],
        )
        # One hop on: the answer comes back as is, and a cancellation of this
        # prompt becomes one $/cancel_request for the agent's id.
        cx.send_request_to(acp.Agent, rewritten).forward_response_to(responder)
        return None

    @builder.on_receive_notification(v1.SessionNotification, peer=acp.Agent)
    async def update(notification: v1.SessionNotification, cx: acp.ConnectionTo[Any]) -> Any:
        chunk = notification.update
        if not (
            isinstance(chunk, v1.SessionUpdateAgentMessageChunk)
            and isinstance(chunk.content, v1.ContentBlockText)
        ):
            return acp.NOT_HANDLED  # other updates pass unchanged
        chunk.content.text = chunk_prefix + chunk.content.text
        log(f"chunk for session {notification.session_id}: {chunk.content.text!r}")
        cx.send_notification_to(acp.Client, notification)
        return None

    async def client_cancelled(message: acp.UntypedMessage, cx: acp.ConnectionTo[Any]) -> Any:
        # The SDK marked the request before this runs; declining lets the
        # default drop the raw notification (its translation already went).
        log(f"client cancelled request {message.params.get('requestId')!r}")
        return acp.NOT_HANDLED

    async def agent_cancelled(message: acp.UntypedMessage, cx: acp.ConnectionTo[Any]) -> Any:
        log(f"agent cancelled its request {message.params.get('requestId')!r}")
        return acp.NOT_HANDLED

    builder.on_receive_notification(client_cancelled, "$/cancel_request", peer=acp.Client)
    builder.on_receive_notification(agent_cancelled, "$/cancel_request", peer=acp.Agent)
    return builder


def run_example_proxy(
    backend: str = "asyncio", *, prompt_prefix: str = "", chunk_prefix: str = ">"
) -> int:
    """Serve the example proxy on stdio until its input ends."""
    builder = build(prompt_prefix=prompt_prefix, chunk_prefix=chunk_prefix)
    anyio.run(builder.connect_to, acp.stdio(), backend=backend)
    return 0


def main() -> int:
    """``python -m acp_fast.examples.proxy [options]``: as ``acp-fast example-proxy``."""
    from acp_fast._cli import main as cli_main

    return cli_main(["example-proxy", *sys.argv[1:]])


if __name__ == "__main__":
    raise SystemExit(main())
