"""serve_versioned_agent answers the first initialize as the chosen version's
agent answers it on its own: invalid params -32602, the legacy leniency."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT, RawPeer
from tests.typed.test_class_api import Agent as AgentV1
from tests.typed.test_v2 import AgentV2

pytestmark = pytest.mark.anyio

INFO = {"name": "raw", "version": "1"}


async def answers(
    serve: Callable[[acp.Transport], Awaitable[None]], *calls: dict[str, Any]
) -> list[dict[str, Any]]:
    ours, theirs = memory_pair()
    replies = []
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(serve, ours)
            async with RawPeer(theirs) as peer:
                for number, params in enumerate(calls, 1):
                    peer.send(
                        {"jsonrpc": "2.0", "id": number, "method": "initialize", "params": params}
                    )
                    replies.append(await peer.receive())
            group.cancel_scope.cancel()
    return replies


def versioned(transport: acp.Transport) -> Awaitable[None]:
    return acp.serve_versioned_agent(v1=AgentV1(), v2=AgentV2(), transport=transport)


@pytest.mark.parametrize(
    ("params", "alone"),
    [
        # v2 asked, without the required `info`: v2's own -32602.
        ({"protocolVersion": 2}, partial(acp.serve_agent_v2, AgentV2())),
        # A legacy date string: v1, whose leniency negotiates version 1.
        ({"protocolVersion": "2024-11-05"}, partial(acp.serve_agent, AgentV1())),
        ({"protocolVersion": [1]}, partial(acp.serve_agent, AgentV1())),
        ({}, partial(acp.serve_agent, AgentV1())),
    ],
    ids=["v2-without-info", "legacy-date", "bad-version", "no-version"],
)
async def test_the_first_initialize_is_answered_as_the_version_alone_answers_it(
    params: dict[str, Any], alone: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="acp_fast"):
        got = await answers(versioned, params)
    assert got == await answers(alone, params)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    if "error" in got[0]:
        assert got[0]["error"]["code"] == -32602
        assert "protocolVersion" in got[0]["error"]["data"]["error"] or (
            "`info`" in got[0]["error"]["data"]["error"]
        )
    else:
        assert got[0]["result"]["protocolVersion"] == 1


async def test_a_v2_initialize_with_invalid_params_can_be_retried() -> None:
    first, second = await answers(
        versioned, {"protocolVersion": 2}, {"protocolVersion": 2, "info": INFO}
    )
    assert first["error"]["code"] == -32602 and "`info`" in first["error"]["data"]["error"]
    assert second["result"]["protocolVersion"] == 2
