"""Harness for chains: a client talking to an in-process conductor.

``running_chain(agent, proxies, client)`` serves ``Conductor(proxies, agent)``
over an in-memory link and yields the client's ``cx``. Components may be
builders (served in this process), transports (a ``RawPeer`` at the other
end, for wire-exact checks) or argv lists.

The agents and proxies of the scenarios follow docs/semantics.md §6: a
request ``simple_method`` with ``{"message": ...}`` is echoed, ``"park"``
waits until cancelled and is then answered -32800, and "exactly one cancel"
is asserted after a barrier round trip through the whole chain.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import acp_fast as acp
from acp_fast.conductor import Component, Conductor
from acp_fast.schema import v1
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT


@asynccontextmanager
async def running_chain(
    agent: Component,
    proxies: Sequence[Component] = (),
    client: acp.Builder[Any] | None = None,
) -> AsyncIterator[Any]:
    """client → conductor → proxies → agent; yields the client's cx.

    Leaving the block closes the client, and the conductor must then end
    cleanly (it shuts its components down).
    """
    conductor = Conductor(proxies=proxies, agent=agent)
    ours, theirs = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(conductor.serve, theirs)
        async with (client or acp.Client.builder()).name("client").connect(ours) as cx:
            yield cx


def park(responder: acp.Responder[Any], cx: Any) -> None:
    """Answer ``responder`` once its request is cancelled: -32800."""

    async def run() -> None:
        try:
            responder.respond(
                await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
            )
        except acp.Error as error:
            responder.respond_with_error(error)

    cx.spawn(run)


async def answer_initialize(
    request: v1.InitializeRequest, responder: acp.Responder[Any], cx: Any
) -> None:
    responder.respond(v1.InitializeResponse(protocol_version=request.protocol_version))


async def initialize(cx: Any) -> None:
    with anyio.fail_after(TIMEOUT):
        response = await cx.send_request(v1.InitializeRequest(protocol_version=1))
    assert response.protocol_version == 1


async def expect_cancelled(sent: acp.SentRequest[Any]) -> None:
    with pytest.raises(acp.Error) as caught, anyio.fail_after(TIMEOUT):
        await sent
    assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED


class Parked:
    """The ids of the requests an endpoint parked."""

    def __init__(self) -> None:
        self.ids: list[Any] = []
        self.event = anyio.Event()

    def add(self, request_id: Any) -> None:
        self.ids.append(request_id)
        self.event.set()

    async def wait(self) -> None:
        with anyio.fail_after(TIMEOUT):
            await self.event.wait()


# --- raw JSON-RPC lines, for the wire-exact tests ------------------------------

ENVELOPE = "_proxy/successor"


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def wrapped(method: str, params: Any = None) -> dict[str, Any]:
    inner: dict[str, Any] = {"method": method}
    if params is not None:
        inner["params"] = params
    return inner


def cancel(request_id: Any) -> dict[str, Any]:
    return notification("$/cancel_request", {"requestId": request_id})


def result(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


CANCELLED = {"code": -32800, "message": "Request cancelled"}


def error(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": value}
