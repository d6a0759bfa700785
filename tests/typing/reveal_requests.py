"""What type checkers see of the public API (checked by tests/test_typing.py).

A ``# R: type`` comment names the type mypy must reveal for the
``reveal_type`` call on the next line. This file is type-checked, never run.
"""

from __future__ import annotations

import acp_fast as acp
from acp_fast.schema import v1, v2


async def client_side(transport: acp.Transport) -> None:
    builder = acp.Client.builder()
    # R: acp_fast._async.builder.Builder[acp_fast._async.roles.Agent]
    reveal_type(builder)
    async with builder.connect(transport) as cx:
        # R: acp_fast._async.connection.ConnectionTo[acp_fast._async.roles.Agent]
        reveal_type(cx)
        sent = cx.send_request(v1.InitializeRequest(protocol_version=1))
        # R: acp_fast._async.requests.SentRequest[acp_fast.schema.v1.InitializeResponse]
        reveal_type(sent)
        # R: acp_fast.schema.v1.InitializeResponse
        reveal_type(await sent)
        prompt = cx.send_request(v1.PromptRequest(session_id="s", prompt=[]))
        # R: acp_fast.schema.v1.PromptResponse
        reveal_type(await prompt.block_task())
        prepared = cx.prepare_request(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
        # R: acp_fast._async.requests.PreparedRequest[acp_fast.schema.v1.NewSessionResponse]
        reveal_type(prepared)
        untyped = cx.send_request(acp.UntypedMessage("_vendor/x", {}))
        # R: acp_fast._async.requests.SentRequest[Any]
        reveal_type(untyped)
        info = v2.Implementation(name="editor", version="1")
        v2_sent = cx.send_request(v2.InitializeRequest(protocol_version=2, info=info))
        # R: acp_fast._async.requests.SentRequest[acp_fast.schema.v2.InitializeResponse]
        reveal_type(v2_sent)
        mapped = sent.map(lambda response: response.protocol_version)
        # R: acp_fast._async.requests.SentRequest[int]
        reveal_type(mapped)


def agent_side() -> None:
    # R: acp_fast._async.builder.Builder[acp_fast._async.roles.Client]
    reveal_type(acp.Agent.builder())
