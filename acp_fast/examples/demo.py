"""``acp-fast demo``: a client drives the example agent over stdio.

The agent runs as a real subprocess (``python -m acp_fast example-agent``);
the demo shows a streamed prompt with a permission request and a file write,
a turn stopped with ``session/cancel``, and a request stopped with
``$/cancel_request``.
"""

from __future__ import annotations

import os
import sys

import anyio

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1

__all__ = ("DemoClient", "run_demo")


class DemoClient(acp.BaseClient):
    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.chunks = 0
        self.streaming = anyio.Event()
        # Whoever reads our output may leave early (``acp-fast demo | head``):
        # then the demo stops, and ends with the BrokenPipeError.
        self.output_broken = False
        self.stop = anyio.CancelScope()

    def say(self, text: str, end: str = "\n") -> None:
        """Print ``text`` at once; a closed stdout stops the demo."""
        if self.output_broken:
            return
        try:
            print(text, end=end, flush=True)
        except BrokenPipeError:
            self.output_broken = True
            self.stop.cancel()

    async def session_update(self, notification: v1.SessionNotification) -> None:
        update = notification.update
        if isinstance(update, v1.SessionUpdateAgentMessageChunk):
            if isinstance(update.content, v1.ContentBlockText):
                self.say(update.content.text, end="")
            self.chunks += 1
            self.streaming.set()
        elif isinstance(update, v1.SessionUpdateToolCall):
            self.say(f"\n  [tool call {update.tool_call_id}: {update.title} ({update.status})]")
        elif isinstance(update, v1.SessionUpdateToolCallUpdate):
            self.say(f"  [tool call {update.tool_call_id}: {update.status}]")

    async def request_permission(
        self, request: v1.RequestPermissionRequest
    ) -> v1.RequestPermissionResponse:
        self.say(f"  [permission asked for {request.tool_call.tool_call_id}: allowing]")
        return h.permission_selected("allow")

    async def write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse:
        self.files[request.path] = request.content
        self.say(f"  [wrote {len(request.content)} characters to {request.path}]")
        return v1.WriteTextFileResponse()


async def demo(command: list[str] | None = None) -> None:
    """Run the demo against ``command`` (default: the example agent)."""
    client = DemoClient()
    with client.stop:
        await _demo(client, command)
    if client.output_broken:
        raise BrokenPipeError("stdout was closed")


async def _demo(client: DemoClient, command: list[str] | None) -> None:
    from acp_fast._core import IMPLEMENTATION

    say = client.say
    if command is None:
        command = [sys.executable, "-m", "acp_fast", "example-agent"]
    say(
        f"acp_fast {acp.__version__} demo (core: {'compiled' if IMPLEMENTATION == 'c' else 'pure Python'})"
    )
    async with acp.spawn_agent(client, command) as agent:
        init = await agent.initialize(
            client_capabilities=v1.ClientCapabilities(
                fs=v1.FileSystemCapabilities(read_text_file=True, write_text_file=True)
            ),
            client_info=v1.Implementation(name="acp-fast-demo", version=acp.__version__),
        )
        info = init.agent_info
        say(f"connected to {getattr(info, 'name', 'an agent')}, protocol v{init.protocol_version}")
        session = await agent.new_session(cwd=os.getcwd())
        sid = session.session_id

        say("\n> Hello from the demo")
        result = await agent.prompt(sid, "Hello from the demo")
        say(f"stop reason: {result.stop_reason}")

        say("\n> /wait   (then session/cancel)")
        client.streaming = anyio.Event()
        turn = agent.start_prompt(sid, "/wait")
        with anyio.fail_after(10):
            await client.streaming.wait()
        await agent.cancel(sid)
        say(f"\nstop reason: {(await turn).stop_reason}")

        say("\n> _example/slow   (then $/cancel_request)")
        slow = agent.send_request(acp.UntypedMessage("_example/slow", {}))
        slow.cancel()
        try:
            await slow
        except acp.Error as error:
            say(f"answered {error.code} {error.message}")
    say("the agent exited; done")


def run_demo(backend: str = "asyncio") -> int:
    anyio.run(demo, backend=backend)
    return 0
