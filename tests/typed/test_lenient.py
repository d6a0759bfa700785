"""Leniencies of the class-based agents (docs/migration.md, "Leniencies")."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import acp_fast as acp
import acp_fast.compat
from acp_fast.schema import v1
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class NativeAgent(acp.BaseAgent):
    def __init__(self) -> None:
        self.versions: list[int] = []

    async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
        self.versions.append(request.protocol_version)
        return v1.InitializeResponse(protocol_version=1)


class OfficialStyleAgent:
    def __init__(self) -> None:
        self.versions: list[int] = []

    async def initialize(self, protocol_version: int, **_: Any) -> Any:
        self.versions.append(protocol_version)
        return acp_fast.compat.schema.InitializeResponse(protocol_version=1)


async def initialize_with(agent: Any, serve: Any, version: object) -> Any:
    agent_end, client_end = memory_pair()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, agent, agent_end)
            try:
                async with acp.Client.builder().connect(client_end) as cx:
                    try:
                        return await cx.send_request(
                            acp.UntypedMessage("initialize", {"protocolVersion": version})
                        )
                    except acp.Error as error:
                        return error
            finally:
                tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("make", "serve"),
    [(NativeAgent, acp.serve_agent), (OfficialStyleAgent, acp_fast.compat.serve_agent)],
)
async def test_a_legacy_string_protocol_version_negotiates_version_1(make: Any, serve: Any) -> None:
    agent = make()
    answer = await initialize_with(agent, serve, "2024-11-05")
    assert answer["protocolVersion"] == 1
    assert agent.versions == [1]
    assert (await initialize_with(agent, serve, 1))["protocolVersion"] == 1
    assert agent.versions == [1, 1]


async def test_other_bad_protocol_versions_are_still_invalid_params() -> None:
    error = await initialize_with(NativeAgent(), acp.serve_agent, [1])
    assert isinstance(error, acp.Error) and error.code == -32602
