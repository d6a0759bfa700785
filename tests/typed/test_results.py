"""Results of the wrong shape (docs/semantics.md §1.3): the answering side
answers -32603 and logs; the receiving side reports an invalid result, never
a parse error."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT, RawPeer

pytestmark = pytest.mark.anyio


class ForgetfulAgent(acp.BaseAgent):
    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return {"sessionId": "s1"}  # type: ignore[return-value]  # a dict that fits

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        return None  # type: ignore[return-value]

    async def authenticate(self, request: v1.AuthenticateRequest) -> Any:
        return {"unexpected": "extra"}  # fits: every field is optional


async def test_a_handler_returning_the_wrong_type_is_answered_internal_error(caplog):
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(acp.serve_agent, ForgetfulAgent(), ours)
        async with acp.connect_to_agent(acp.BaseClient(), theirs) as conn:
            with anyio.fail_after(TIMEOUT):
                session = await conn.new_session(cwd="/")
                assert session.session_id == "s1"
                with pytest.raises(acp.Error) as caught:
                    await conn.prompt(session.session_id, "hi")
                await conn.send_request(v1.AuthenticateRequest(method_id="m"))
    error = caught.value
    assert error.code == -32603
    assert error.data["reason"] == "invalid_result"
    assert error.data["method"] == "session/prompt"
    assert "ForgetfulAgent.prompt returned NoneType" in error.data["details"]
    assert "PromptResponse" in error.data["details"]
    assert "does it end with `return PromptResponse(...)`?" in error.data["details"]
    # The hint is in the message itself, which str() shows first and whole.
    assert error.message == (
        "ForgetfulAgent.prompt returned None (does it end with `return PromptResponse(...)`?)"
    )
    assert str(error).startswith(error.message)
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any("ForgetfulAgent.prompt returned NoneType" in r.getMessage() for r in logged)


async def test_a_result_that_fails_validation_is_an_invalid_result_with_its_path():
    ours, theirs = memory_pair()
    async with RawPeer(theirs) as agent, acp.connect_to_agent(acp.BaseClient(), ours) as conn:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                outcome: list[Any] = []

                async def prompt() -> None:
                    try:
                        await conn.prompt("s1", "hi")
                    except acp.Error as exc:
                        outcome.append(exc)

                group.start_soon(prompt)
                request = await agent.receive()
                assert request["method"] == "session/prompt"
                agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"stopReason": 5}})
    [error] = outcome
    assert error.code == -32603 and error.code != -32700
    assert error.message == "Invalid result of `session/prompt`"
    assert error.data["reason"] == "invalid_result"
    assert error.data["method"] == "session/prompt"
    assert error.data["path"] == "$.stopReason"
