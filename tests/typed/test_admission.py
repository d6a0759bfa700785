"""Admission never blocks control traffic (docs/semantics.md §2.4, admission).

A class-API agent runs at most ``max_concurrent_requests`` requests; the
rest wait in a queue while the dispatch loop reads on. Each case here used
to deadlock: the loop waited for a free slot and so never read the cancel,
the permission answer or the EOF that would have freed one. The agent is
``acp-fast example-agent`` (or the same agent with a smaller limit) in a
real subprocess on real pipes, driven by a raw NDJSON peer.
"""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
import pytest

from acp_fast._core import LineBuffer

pytestmark = pytest.mark.anyio

LIMITED_AGENT = str(Path(__file__).with_name("limited_agent.py"))
# Generous: the machine may be loaded; a deadlock shows as this timeout.
BOUND = 20.0


class AgentProcess:
    """An agent subprocess driven line by line over its stdin and stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._framer = LineBuffer()
        self._lines: deque[bytes] = deque()
        self.seen: list[Any] = []  # every message read, in order

    async def send(self, *messages: Any) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(b"".join(orjson.dumps(m) + b"\n" for m in messages))

    async def receive(self) -> Any:
        assert self.process.stdout is not None
        while not self._lines:
            self._lines.extend(self._framer.feed(await self.process.stdout.receive()))
        message = orjson.loads(self._lines.popleft())
        self.seen.append(message)
        return message

    async def answers(self, count: int, permit: bool = True) -> dict[Any, Any]:
        """Read until ``count`` responses came; answer permission requests."""
        answers: dict[Any, Any] = {}
        while len(answers) < count:
            message = await self.receive()
            if message.get("method") == "session/request_permission" and permit:
                outcome = {"outcome": "selected", "optionId": "allow"}
                await self.send(
                    {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}}
                )
            elif "method" not in message:
                assert message["id"] not in answers, f"answered twice: {message}"
                answers[message["id"]] = message
        return answers

    async def close_and_wait(self) -> int:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        return await self.process.wait()


async def spawn(anyio_backend: str, limit: int | None = None) -> AgentProcess:
    if limit is None:
        command = [sys.executable, "-m", "acp_fast", "example-agent", "--backend", anyio_backend]
    else:
        command = [sys.executable, LIMITED_AGENT, str(limit), anyio_backend]
    process = await anyio.open_process(command, stderr=subprocess.DEVNULL)
    return AgentProcess(process)


def request(request_id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def slow(request_id: Any) -> dict[str, Any]:
    return request(request_id, "_example/slow", {})


def cancel_request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}


def session_cancel(session_id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}


def prompt(request_id: Any, session_id: str, text: str) -> dict[str, Any]:
    params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    return request(request_id, "session/prompt", params)


async def open_sessions(agent: AgentProcess, count: int) -> list[str]:
    await agent.send(request("init", "initialize", {"protocolVersion": 1}))
    await agent.send(
        *(request(f"new-{n}", "session/new", {"cwd": "/", "mcpServers": []}) for n in range(count))
    )
    answers = await agent.answers(count + 1)
    return [answers[f"new-{n}"]["result"]["sessionId"] for n in range(count)]


@pytest.mark.parametrize("count", [65, 1000])
async def test_waiting_requests_cancelled_before_they_start_are_answered_at_once(
    anyio_backend: str, count: int
) -> None:
    agent = await spawn(anyio_backend)
    async with agent.process:
        with anyio.fail_after(BOUND):
            await agent.send(*(slow(n) for n in range(1, count + 1)))
            # The newest waits for a slot; its cancel is read and answered.
            await agent.send(cancel_request(count))
            first = await agent.receive()
            assert first["id"] == count and first["error"]["code"] == -32800
            await agent.send(*(cancel_request(n) for n in range(count - 1, 0, -1)))
            answers = await agent.answers(count - 1)
            assert sorted(answers) == list(range(1, count))
            assert {a["error"]["code"] for a in answers.values()} == {-32800}
            assert await agent.close_and_wait() == 0


async def test_a_cancelled_running_request_frees_its_slot_for_the_oldest_waiting_one(
    anyio_backend: str,
) -> None:
    agent = await spawn(anyio_backend, limit=1)
    async with agent.process:
        with anyio.fail_after(BOUND):
            sessions = await open_sessions(agent, 1)
            await agent.send(slow(1), prompt("p", sessions[0], "hello"))
            await agent.send(cancel_request(1))  # frees the one slot: the prompt starts
            answers = await agent.answers(2)
            assert answers[1]["error"]["code"] == -32800
            assert answers["p"]["result"]["stopReason"] == "end_turn"
            assert await agent.close_and_wait() == 0


async def test_65_prompts_asking_permission_all_finish(anyio_backend: str) -> None:
    agent = await spawn(anyio_backend)
    async with agent.process:
        with anyio.fail_after(BOUND):
            sessions = await open_sessions(agent, 65)
            await agent.send(*(prompt(n, s, "note this") for n, s in enumerate(sessions)))
            answers = await agent.answers(65)
            assert {a["result"]["stopReason"] for a in answers.values()} == {"end_turn"}
            assert await agent.close_and_wait() == 0


async def test_a_waiting_prompt_stopped_by_session_cancel_answers_cancelled_without_running(
    anyio_backend: str,
) -> None:
    agent = await spawn(anyio_backend)
    async with agent.process:
        with anyio.fail_after(BOUND):
            sessions = await open_sessions(agent, 65)
            await agent.send(*(prompt(n, s, "/wait") for n, s in enumerate(sessions)))
            await agent.send(session_cancel(sessions[64]))  # the one waiting for a slot
            answers = await agent.answers(1)
            assert answers[64]["result"] == {"stopReason": "cancelled"}
            await agent.send(*(session_cancel(s) for s in sessions[:64]))
            answers = await agent.answers(64)
            assert {a["result"]["stopReason"] for a in answers.values()} == {"cancelled"}
            updated = {
                m["params"]["sessionId"] for m in agent.seen if m.get("method") == "session/update"
            }
            assert sessions[64] not in updated  # it never ran
            assert await agent.close_and_wait() == 0


async def test_one_slot_two_sessions_the_first_sessions_cancel_is_read(
    anyio_backend: str,
) -> None:
    agent = await spawn(anyio_backend, limit=1)
    async with agent.process:
        with anyio.fail_after(BOUND):
            first, second = await open_sessions(agent, 2)
            await agent.send(prompt(1, first, "/wait"), prompt(2, second, "/wait"))
            await agent.send(session_cancel(first))
            assert (await agent.answers(1))[1]["result"] == {"stopReason": "cancelled"}
            while True:  # the second prompt got the slot and runs
                message = await agent.receive()
                if message.get("method") == "session/update":
                    assert message["params"]["sessionId"] == second
                    break
            await agent.send(session_cancel(second))
            assert (await agent.answers(1))[2]["result"] == {"stopReason": "cancelled"}
            assert await agent.close_and_wait() == 0


@pytest.mark.parametrize("count", [65, 1000])
async def test_eof_ends_a_saturated_agent(anyio_backend: str, count: int) -> None:
    agent = await spawn(anyio_backend)
    async with agent.process:
        with anyio.fail_after(BOUND):
            sessions = await open_sessions(agent, 1)
            await agent.send(*(slow(n) for n in range(count)))
            await agent.send(prompt("p", sessions[0], "/wait"))
        # EOF reaches the loop although every slot is taken.
        with anyio.fail_after(5):
            assert await agent.close_and_wait() == 0


async def test_a_reused_id_in_flight_is_refused_and_leaks_no_slot(anyio_backend: str) -> None:
    agent = await spawn(anyio_backend, limit=1)
    async with agent.process:
        with anyio.fail_after(BOUND):
            await agent.send(slow(7), slow(7))
            refused = await agent.receive()
            assert refused["id"] == 7 and refused["error"]["code"] == -32600
            await agent.send(cancel_request(7), cancel_request(7))
            cancelled = await agent.receive()
            assert cancelled["id"] == 7 and cancelled["error"]["code"] == -32800
            # The one slot is free again: a request runs and is answered.
            sessions = await open_sessions(agent, 1)
            await agent.send(prompt("p", sessions[0], "hello"))
            assert (await agent.answers(1))["p"]["result"]["stopReason"] == "end_turn"
            assert [m.get("id") for m in agent.seen].count(7) == 2  # nothing else for id 7
            assert await agent.close_and_wait() == 0
