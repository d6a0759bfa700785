"""Mistakes type checkers must report (checked by tests/test_typing.py).

Each line that ends in ``# E: code`` must get exactly that mypy error code;
no other line may get one. This file is type-checked, never run.
"""

from __future__ import annotations

import acp_fast as acp
from acp_fast.schema import v1


async def mistakes(cx: acp.ConnectionTo[acp.Agent]) -> None:
    # A notification is not a request: there is no answer to await.
    cx.send_request(v1.CancelNotification(session_id="s"))  # E: call-overload
    response = await cx.send_request(v1.InitializeRequest(protocol_version=1))
    # The answer of initialize has no session id.
    print(response.session_id)  # E: attr-defined
    new = await cx.send_request(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
    wrong: v1.PromptResponse = new  # E: assignment
