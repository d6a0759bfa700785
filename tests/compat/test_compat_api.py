"""acp_fast.compat: an agent and a client in the official SDK's style, on acp_fast.

Both sides are written as for ``agent-client-protocol`` 0.12 (keyword-argument
methods, ``on_connect``, the official schema and helper names) and only
import ``acp_fast.compat``; they run in one process over a memory pair, on
asyncio and trio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import pytest

import acp_fast.compat as acp
from acp_fast.compat.helpers import (
    start_tool_call,
    text_block,
    tool_terminal_ref,
    update_agent_message_text,
    update_tool_call,
)
from acp_fast.compat.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp_fast.testing import memory_pair
from tests.support import TIMEOUT

pytestmark = pytest.mark.anyio


class OfficialStyleAgent:
    """An agent as written for the official SDK (no acp_fast names)."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: list[str] = []
        self.prompt_stopped = anyio.Event()
        self.waiting = anyio.Event()
        self.permission_outcome: Any = None
        self.notes: list[tuple[str, dict[str, Any]]] = []

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        caps = kwargs["client_capabilities"]
        # Omitted optional fields are None; official defaults are filled in.
        assert kwargs["client_info"].title is None
        assert caps.terminal is False
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_info=Implementation(name="compat-agent", version="1.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any], **kwargs: Any) -> Any:
        assert kwargs["additional_directories"] is None
        return NewSessionResponse(session_id=f"s-{cwd}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        block = prompt[0]
        assert isinstance(block, TextContentBlock) and block.annotations is None
        if block.text == "work":
            return await self._work(session_id)
        if block.text in ("wait", "ask-then-wait"):
            try:
                if block.text == "ask-then-wait":
                    self.waiting.set()
                    reply = await self.conn.request_permission(
                        session_id=session_id,
                        tool_call=ToolCallUpdate(tool_call_id="t2"),
                        options=[PermissionOption(option_id="ok", name="OK", kind="allow_once")],
                    )
                    self.permission_outcome = reply.outcome
                else:
                    await self.conn.session_update(session_id, update_agent_message_text("zzz"))
                    self.waiting.set()
                await anyio.sleep_forever()
            finally:
                self.prompt_stopped.set()
        raise acp.RequestError.invalid_params({"text": block.text})

    async def _work(self, session_id: str) -> PromptResponse:
        for word in ("one", "two"):
            await self.conn.session_update(
                session_id=session_id, update=update_agent_message_text(word)
            )
        await self.conn.session_update(
            session_id=session_id,
            update=start_tool_call("t1", "Edit", kind="edit", status="pending"),
        )
        reply = await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="t1", title="Edit"),
            options=[
                PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                PermissionOption(option_id="no", name="No", kind="reject_once"),
            ],
        )
        if not isinstance(reply.outcome, AllowedOutcome) or reply.outcome.option_id != "yes":
            return PromptResponse(stop_reason="refusal")
        read = await self.conn.read_text_file(session_id=session_id, path="/a.txt", line=2)
        await self.conn.write_text_file(
            session_id=session_id, path="/b.txt", content=read.content.upper()
        )
        term = await self.conn.create_terminal(
            session_id=session_id, command="echo", args=["hi"], output_byte_limit=100
        )
        output = await self.conn.terminal_output(
            session_id=session_id, terminal_id=term.terminal_id
        )
        exited = await self.conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=term.terminal_id
        )
        await self.conn.release_terminal(session_id=session_id, terminal_id=term.terminal_id)
        await self.conn.session_update(
            session_id=session_id,
            update=update_tool_call(
                "t1",
                status="completed",
                content=[tool_terminal_ref(term.terminal_id)],
                raw_output={"output": output.output, "exit": exited.exit_code},
            ),
        )
        echoed = await self.conn.ext_method("client/echo", {"n": 1})
        await self.conn.ext_notification("client/note", {"from": "agent"})
        return PromptResponse(stop_reason="end_turn", field_meta={"echoed": echoed})

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.append(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "agent/slow":
            try:
                await anyio.sleep_forever()
            finally:
                self.prompt_stopped.set()
        return {"method": method, "params": params}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append((method, params))


class OfficialStyleClient:
    """A client as written for the official SDK."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.notes: list[tuple[str, dict[str, Any]]] = []
        self.permission_asked = anyio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.calls.append(("permission", {"tool_call_id": tool_call.tool_call_id}))
        if tool_call.tool_call_id == "t2":
            self.permission_asked.set()
            await anyio.sleep_forever()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> ReadTextFileResponse:
        self.calls.append(("read", {"path": path, "line": line, "limit": limit}))
        return ReadTextFileResponse(content="text")

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.calls.append(("write", {"path": path, "content": content}))
        return WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, **kwargs: Any) -> Any:
        self.calls.append(("terminal", {"command": command, "args": kwargs["args"]}))
        return CreateTerminalResponse(terminal_id="term-1")

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return TerminalOutputResponse(output="hi\n", truncated=False)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> Any:
        return WaitForTerminalExitResponse(exit_code=0)

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        self.calls.append(("release", {"terminal_id": terminal_id}))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"echo": method, **params}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append((method, params))


@asynccontextmanager
async def connected(
    agent: OfficialStyleAgent, client: OfficialStyleClient
) -> AsyncIterator[acp.ClientSideConnection]:
    agent_end, client_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(acp.serve_agent, agent, agent_end)
        async with acp.open_connection(client, client_end) as conn:
            yield conn
        tg.cancel_scope.cancel()


async def start(conn: acp.ClientSideConnection) -> str:
    init = await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
        ),
        client_info=Implementation(name="compat-client", version="1.0"),
    )
    assert init.protocol_version == 1
    assert init.agent_info.name == "compat-agent"
    assert init.agent_capabilities.load_session is False
    session = await conn.new_session(cwd="/w", mcp_servers=[])
    return str(session.session_id)


async def test_a_streamed_prompt_with_permission_files_terminal_and_extensions() -> None:
    agent, client = OfficialStyleAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            sid = await start(conn)
            assert sid == "s-/w"
            result = await conn.prompt(session_id=sid, prompt=[text_block("work")])
            await conn.ext_notification("agent/note", {"from": "client"})
            assert await conn.ext_method("agent/x", {"k": 1}) == {
                "method": "agent/x",
                "params": {"k": 1},
            }
    assert result.stop_reason == "end_turn"
    assert result.field_meta == {"echoed": {"echo": "client/echo", "n": 1}}
    # Every update arrived, in order, before prompt() returned.
    kinds = [type(u) for u in client.updates]
    assert kinds == [AgentMessageChunk, AgentMessageChunk, ToolCallStart, ToolCallProgress]
    assert [u.content.text for u in client.updates[:2]] == ["one", "two"]
    start_update, done = client.updates[2], client.updates[3]
    assert (start_update.session_update, start_update.kind, start_update.status) == (
        "tool_call",
        "edit",
        "pending",
    )
    assert start_update.locations is None and start_update.raw_input is None
    assert done.title is None and done.status == "completed"
    assert done.content[0].terminal_id == "term-1"
    assert done.model_dump(by_alias=True, exclude_none=True) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "completed",
        "content": [{"type": "terminal", "terminalId": "term-1"}],
        "rawOutput": {"output": "hi\n", "exit": 0},
    }
    assert client.calls == [
        ("permission", {"tool_call_id": "t1"}),
        ("read", {"path": "/a.txt", "line": 2, "limit": None}),
        ("write", {"path": "/b.txt", "content": "TEXT"}),
        ("terminal", {"command": "echo", "args": ["hi"]}),
        ("release", {"terminal_id": "term-1"}),
    ]
    assert client.notes == [("client/note", {"from": "agent"})]
    assert agent.notes == [("agent/note", {"from": "client"})]


async def test_session_cancel_stops_the_prompt_without_bookkeeping() -> None:
    agent, client = OfficialStyleAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            sid = await start(conn)
            async with anyio.create_task_group() as tg:
                results: list[Any] = []

                async def run() -> None:
                    results.append(await conn.prompt(session_id=sid, prompt=[text_block("wait")]))

                tg.start_soon(run)
                await agent.waiting.wait()
                await conn.cancel(session_id=sid)
            await agent.prompt_stopped.wait()
    assert results[0].stop_reason == "cancelled"
    assert agent.cancelled == [sid]
    assert [u.content.text for u in client.updates] == ["zzz"]


async def test_session_cancel_answers_a_pending_permission_with_the_cancelled_outcome() -> None:
    agent, client = OfficialStyleAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            sid = await start(conn)
            async with anyio.create_task_group() as tg:
                results: list[Any] = []

                async def run() -> None:
                    results.append(
                        await conn.prompt(session_id=sid, prompt=[text_block("ask-then-wait")])
                    )

                tg.start_soon(run)
                await client.permission_asked.wait()
                await conn.cancel(session_id=sid)
    assert results[0].stop_reason == "cancelled"
    # The client answered "cancelled" before the agent's prompt was stopped, or
    # the agent was stopped first: either way no other outcome was seen.
    assert agent.permission_outcome is None or isinstance(agent.permission_outcome, DeniedOutcome)


async def test_abandoning_a_request_cancels_the_handler_on_the_agent() -> None:
    agent, client = OfficialStyleAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            await start(conn)
            with anyio.move_on_after(0.05):
                await conn.ext_method("agent/slow", {})
            # $/cancel_request went out: the official-style handler is stopped.
            await agent.prompt_stopped.wait()
            assert await conn.ext_method("agent/x", {}) == {"method": "agent/x", "params": {}}


async def test_errors_are_request_errors_with_code_and_data() -> None:
    agent, client = OfficialStyleAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            sid = await start(conn)
            with pytest.raises(acp.RequestError) as raised:
                await conn.prompt(session_id=sid, prompt=[text_block("nope")])
            assert (raised.value.code, raised.value.data) == (-32602, {"text": "nope"})
            assert str(raised.value) == "Invalid params"
            # Not implemented by the agent: -32601, never a silent null.
            with pytest.raises(acp.RequestError) as missing:
                await conn.load_session(cwd="/w", session_id=sid)
            assert missing.value.code == -32601


class _PlainAgent:
    """An official-style agent with no extension methods."""

    async def initialize(self, protocol_version: int, **_: Any) -> Any:
        return InitializeResponse(protocol_version=protocol_version)


class _RefusingAgent(_PlainAgent):
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.invalid_params({"method": method})


async def test_extension_errors_reach_the_caller_as_request_errors() -> None:
    with anyio.fail_after(TIMEOUT):
        async with connected(_RefusingAgent(), OfficialStyleClient()) as conn:  # type: ignore[arg-type]
            with pytest.raises(acp.RequestError) as refused:
                await conn.ext_method("agent/x", {})
            assert (refused.value.code, refused.value.data) == (-32602, {"method": "agent/x"})
        async with connected(_PlainAgent(), OfficialStyleClient()) as conn:  # type: ignore[arg-type]
            with pytest.raises(acp.RequestError) as missing:
                await conn.ext_method("agent/x", {})
            assert missing.value.code == -32601
            # The notification is dropped; the connection still answers.
            await conn.ext_notification("agent/note", {})
            with pytest.raises(acp.RequestError):
                await conn.ext_method("agent/y", {})


async def test_models_behave_like_the_official_ones() -> None:
    caps = ClientCapabilities()
    assert caps.fs.read_text_file is False and caps.terminal is False
    assert caps.field_meta is None
    block = TextContentBlock(type="text", text="hi")
    assert block == text_block("hi")
    assert block.model_dump() == {
        "type": "text",
        "text": "hi",
        "annotations": None,
        "field_meta": None,
    }
    assert block.model_dump(by_alias=True, exclude_none=True) == {"type": "text", "text": "hi"}
    with pytest.raises(ValueError, match="must be 'text'"):
        TextContentBlock(type="image", text="hi")
    parsed = AgentMessageChunk.model_validate(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    )
    assert parsed == update_agent_message_text("x")
    assert parsed.model_copy(update={"message_id": "m"}).message_id == "m"
    assert TerminalExitStatus(exit_code=1).signal is None
    assert DeniedOutcome().outcome == "cancelled"


class FlagAgent(OfficialStyleAgent):
    """Official-style bookkeeping: cancel() sets a flag the prompt clears when it reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.flags: dict[str, bool] = {}

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if prompt[0].text == "check":
            stale = self.flags.pop(session_id, False)
            return PromptResponse(stop_reason="cancelled" if stale else "end_turn")
        return await super().prompt(session_id, prompt, **kwargs)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        await super().cancel(session_id, **kwargs)
        self.flags[session_id] = True


async def test_a_flag_cancel_sets_is_not_read_by_the_prompt_compat_stopped() -> None:
    # docs/migration.md: compat stops the prompt before calling cancel(), so
    # the stopped prompt never reads a flag cancel() sets; reset it when a
    # prompt starts, or drop it.
    agent, client = FlagAgent(), OfficialStyleClient()
    with anyio.fail_after(TIMEOUT):
        async with connected(agent, client) as conn:
            sid = await start(conn)
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(conn.prompt, session_id=sid, prompt=[text_block("wait")]))
                await agent.waiting.wait()
                await conn.cancel(session_id=sid)
            await agent.prompt_stopped.wait()
            assert agent.flags == {sid: True}
            stale = await conn.prompt(session_id=sid, prompt=[text_block("check")])
    assert stale.stop_reason == "cancelled"
