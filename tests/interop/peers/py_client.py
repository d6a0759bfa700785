"""Interop peer: an ACP v1 *client* built with the official Python SDK.

    python py_client.py <agent command...>

Spawns the agent with ``acp.spawn_agent_process`` (``agent-client-protocol``
0.12.1), runs the client script from README.md and prints ONE line of JSON (the
report) on stdout. Logs go to stderr (the agent's stderr is passed through).
Exit code 0 if every expectation held, 1 otherwise, 2 on bad usage.

The SDK cannot send ``$/cancel_request``, so the cancellation step only waits a
short client-side timeout on ``_test/slow`` and expects exactly that timeout:
neither contract agent answers ``_test/slow`` that quickly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import acp
from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

log = logging.getLogger("py_client")

STEP_TIMEOUT_S = 5.0  # per step; a broken peer fails the step, never hangs it
OVERALL_TIMEOUT_S = 30.0  # last-resort guard for the whole run
SLOW_TIMEOUT_S = 0.2  # must stay well below the py agent's 0.5 s sleep
INPUT_TEXT = "interop input\n"
BIG_LENGTH = 10_000_000
STEPS = ("initialize", "sessionNew", "hello", "cancelRequest", "echo", "wait", "big")


class Recorder:
    """What the agent did to us during one step."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.tool_updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.reads: list[str] = []
        self.writes: list[dict[str, str]] = []
        self.chunk_events: dict[str, asyncio.Event] = {}

    def chunk_event(self, text: str) -> asyncio.Event:
        return self.chunk_events.setdefault(text, asyncio.Event())


class InteropClient:
    """Client-side handlers; the SDK calls them with keyword arguments.

    Not a subclass of ``acp.Client`` (a Protocol with empty method bodies), so
    an unexpected request gets -32601 instead of a silent ``null`` result.
    """

    def __init__(self) -> None:
        self.rec = Recorder()
        self._big: str | None = None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = update.session_update
        if kind == "agent_message_chunk" and getattr(update.content, "type", None) == "text":
            text = update.content.text
            self.rec.chunks.append(text)
            self.rec.chunk_event(text).set()
        elif kind in ("tool_call", "tool_call_update"):
            self.rec.tool_updates.append(
                {
                    "sessionUpdate": kind,
                    "toolCallId": update.tool_call_id,
                    "title": update.title,
                    "kind": update.kind,
                    "status": update.status,
                }
            )

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.rec.permissions.append(
            {
                "toolCallId": tool_call.tool_call_id,
                "options": [{"optionId": o.option_id, "kind": o.kind} for o in options],
            }
        )
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow")
        )

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.rec.reads.append(path)
        if path == "/interop/input.txt":
            return ReadTextFileResponse(content=INPUT_TEXT)
        if path == "/interop/big.txt":
            if self._big is None:
                self._big = "x" * BIG_LENGTH
            return ReadTextFileResponse(content=self._big)
        raise RequestError.resource_not_found(path)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.rec.writes.append({"path": path, "content": content})
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


def error_object(exc: BaseException) -> dict[str, Any]:
    """Plain-JSON view of a failure, so the report says exactly what came back."""
    if isinstance(exc, RequestError):
        out: dict[str, Any] = {"code": exc.code, "message": str(exc)}
        if exc.data is not None:
            out["data"] = exc.data
        return out
    if isinstance(exc, asyncio.TimeoutError):
        return {"code": None, "message": "timeout"}
    return {"code": None, "message": f"{type(exc).__name__}: {exc}"}


class Script:
    def __init__(self, conn: Any, client: InteropClient, report: dict[str, Any]) -> None:
        self.conn = conn  # acp.client.connection.ClientSideConnection
        self.client = client
        self.report = report
        self.session_id = ""

    async def run_step(
        self,
        name: str,
        fn: Callable[[], Awaitable[dict[str, Any]]],
        timeout: float = STEP_TIMEOUT_S,
    ) -> bool:
        """Run one step with a fresh recorder and a timeout; failures land in the report."""
        self.client.rec = Recorder()
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(fn(), timeout)
        except Exception as exc:  # any failure becomes a report entry
            log.warning("step %s failed: %r", name, exc)
            result = {"ok": False, "error": error_object(exc), "chunks": self.client.rec.chunks}
        result["ms"] = round((time.perf_counter() - started) * 1000)
        self.report[name] = result
        log.info("step %s: ok=%s (%s ms)", name, result["ok"], result["ms"])
        return bool(result["ok"])

    async def run(self) -> None:
        if not await self.run_step("initialize", self.initialize):
            return
        if not await self.run_step("sessionNew", self.session_new):
            return
        await self.run_step("hello", self.hello)
        await self.run_step("cancelRequest", self.cancel_request)
        await self.run_step("echo", self.echo)
        await self.run_step("wait", self.wait)
        await self.run_step("big", self.big, timeout=2 * STEP_TIMEOUT_S)

    async def initialize(self) -> dict[str, Any]:
        response = await self.conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            ),
            client_info=Implementation(name="interop-py-client", version="0.12.1"),
        )
        info = response.agent_info
        return {
            "protocolVersion": response.protocol_version,
            "agentInfo": info.model_dump(by_alias=True, exclude_none=True) if info else None,
            "ok": response.protocol_version == 1,
        }

    async def session_new(self) -> dict[str, Any]:
        response = await self.conn.new_session(cwd="/interop", mcp_servers=[])
        self.session_id = response.session_id
        return {"sessionId": response.session_id, "ok": isinstance(response.session_id, str)}

    async def prompt(self, text: str) -> Any:
        # ClientSideConnection.prompt() waits for in-flight session_update
        # handlers before returning, so every chunk is recorded by then.
        return await self.conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)])

    async def hello(self) -> dict[str, Any]:
        response = await self.prompt("hello")
        rec = self.client.rec
        tool_call = next((u for u in rec.tool_updates if u["sessionUpdate"] == "tool_call"), None)
        tool_done = next(
            (u for u in rec.tool_updates if u["sessionUpdate"] == "tool_call_update"), None
        )
        expected_permission = {
            "toolCallId": "call-1",
            "options": [
                {"optionId": "allow", "kind": "allow_once"},
                {"optionId": "reject", "kind": "reject_once"},
            ],
        }
        ok = (
            response.stop_reason == "end_turn"
            and rec.chunks == ["Hello", " world", "done"]
            and rec.permissions == [expected_permission]
            and rec.writes == [{"path": "/interop/output.txt", "content": INPUT_TEXT.upper()}]
            and tool_call is not None
            and (
                tool_call["toolCallId"],
                tool_call["title"],
                tool_call["kind"],
                tool_call["status"],
            )
            == ("call-1", "Write file", "edit", "pending")
            and tool_done is not None
            and (tool_done["toolCallId"], tool_done["status"]) == ("call-1", "completed")
        )
        return {
            "stopReason": response.stop_reason,
            "chunks": rec.chunks,
            "permissionSeen": bool(rec.permissions),
            "permissions": rec.permissions,
            "toolUpdates": rec.tool_updates,
            "reads": rec.reads,
            "writes": rec.writes,
            "ok": ok,
        }

    async def cancel_request(self) -> dict[str, Any]:
        # No $/cancel_request is possible with this SDK: wait_for() only drops
        # the local future (nothing goes on the wire) and a late answer is
        # discarded by the SDK. The checkable expectation is therefore
        # "timeout", and the step must end in about SLOW_TIMEOUT_S.
        step: dict[str, Any] = {
            "mechanism": "client_timeout",
            "timeoutSeconds": SLOW_TIMEOUT_S,
            "expected": [{"outcome": "timeout"}],
            "outcome": None,
            "result": None,
            "error": None,
        }
        try:
            step["result"] = await asyncio.wait_for(
                self.conn.ext_method("test/slow", {}), SLOW_TIMEOUT_S
            )
            step["outcome"] = "result"
        except asyncio.TimeoutError:
            step["outcome"] = "timeout"
        except RequestError as exc:
            step["outcome"] = "error"
            step["error"] = error_object(exc)
        step["ok"] = step["outcome"] == "timeout"
        return step

    async def echo(self) -> dict[str, Any]:
        # ext_method() adds the "_" prefix: this goes out as "_test/echo".
        result = await self.conn.ext_method("test/echo", {"text": "barrier"})
        return {"sent": "barrier", "result": result, "ok": result == {"text": "barrier"}}

    async def wait(self) -> dict[str, Any]:
        waiting = self.client.rec.chunk_event("waiting")
        prompt = asyncio.ensure_future(self.prompt("wait"))
        try:
            await waiting.wait()
            await self.conn.cancel(session_id=self.session_id)
            response = await prompt
        finally:
            prompt.cancel()
        chunks = self.client.rec.chunks
        return {
            "chunks": chunks,
            "cancelSent": True,
            "stopReason": response.stop_reason,
            "ok": response.stop_reason == "cancelled" and chunks == ["waiting"],
        }

    async def big(self) -> dict[str, Any]:
        response = await self.prompt("big")
        rec = self.client.rec
        return {
            "chunks": rec.chunks,
            "reads": rec.reads,
            "stopReason": response.stop_reason,
            "ok": response.stop_reason == "end_turn"
            and rec.chunks == [f"len={BIG_LENGTH}"]
            and rec.reads == ["/interop/big.txt"],
        }


def exit_info(returncode: int | None) -> dict[str, Any]:
    """Same shape as Node's exit event: {code, signal}."""
    if returncode is not None and returncode < 0:
        return {"code": None, "signal": signal.Signals(-returncode).name}
    return {"code": returncode, "signal": None}


async def run(agent_command: list[str], report: dict[str, Any]) -> None:
    client = InteropClient()
    process: asyncio.subprocess.Process | None = None
    error: str | None = None
    try:
        async with acp.spawn_agent_process(
            client,
            agent_command[0],
            *agent_command[1:],
            # The SDK trims the child's environment to a few variables by
            # default; pass ours through (PYTHONPATH, coverage, ...).
            env=dict(os.environ),
            # Inherit stderr: the default PIPE is never read and could fill up.
            transport_kwargs={"stderr": None},
        ) as (conn, process):
            await Script(conn, client, report).run()
        # Leaving the block closed the agent's stdin and waited for it to exit
        # (terminate after 2 s, kill after 2 more).
    except Exception as exc:  # could not start, or died under us
        log.error("agent connection failed: %r", exc)
        error = f"{type(exc).__name__}: {exc}"
        if process is not None and process.returncode is None:
            try:
                await asyncio.wait_for(process.wait(), 2.0)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()
    report["agentExit"] = exit_info(process.returncode if process is not None else None)
    if error is not None:
        report["agentExit"]["error"] = error


def main() -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="[py_client] %(levelname)s %(message)s"
    )
    agent_command = sys.argv[1:]
    if not agent_command:
        print("usage: python py_client.py <agent command...>", file=sys.stderr)
        return 2
    report: dict[str, Any] = {"client": "py", "agentCommand": agent_command}
    report.update(dict.fromkeys(STEPS))
    report["agentExit"] = None
    report["ok"] = False
    timed_out = False
    try:
        asyncio.run(asyncio.wait_for(run(agent_command, report), OVERALL_TIMEOUT_S))
    except asyncio.TimeoutError:
        log.error("overall timeout after %s s", OVERALL_TIMEOUT_S)
        timed_out = True
        report["timedOut"] = True
    report["ok"] = not timed_out and all((report[name] or {}).get("ok") is True for name in STEPS)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
