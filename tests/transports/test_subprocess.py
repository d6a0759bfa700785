"""``acp.Subprocess``: graceful shutdown in steps, and stderr passthrough.

The children here are tiny Python programs (not ACP peers): the connection
runs over their stdin/stdout, and what matters is how they are stopped and
where their stderr goes. Waits on a child's progress are bounded events (a
line on its stderr), never sleeps; only the grace period under test is a
real delay, kept short.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import anyio
import pytest

import acp_fast as acp
from tests.transports.scenarios import Peer, as_client, peer_cmd

pytestmark = pytest.mark.anyio

GRACE = 0.3
TIMEOUT = 10.0


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class Lines:
    """A stderr callback that can wait for a given line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = anyio.Event()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, line: str) -> None:
        with anyio.fail_after(TIMEOUT):
            while line not in self.lines:
                await self._changed.wait()


async def connect_until(transport: acp.Subprocess, lines: Lines, ready: str) -> None:
    """Open a connection to the child, wait until it says ``ready``, leave."""

    async def main(cx: Any) -> None:
        await lines.wait_for(ready)

    with anyio.fail_after(TIMEOUT):
        await acp.UntypedRole.builder().connect_with(transport, main)


# A child that logs its progress on stderr, so the test can follow it.
STEPS = """
import os, signal, sys, time
def say(text):
    sys.stderr.write(text + "\\n"); sys.stderr.flush()
{setup}
say("ready")
sys.stdin.buffer.read()   # until its stdin ends
say("stdin closed")
{on_eof}
"""


async def test_exits_when_its_stdin_closes() -> None:
    lines = Lines()
    child = acp.Subprocess(
        python(STEPS.format(setup="", on_eof="sys.exit(0)")), stderr=lines, grace_period=TIMEOUT
    )
    with anyio.fail_after(TIMEOUT / 2):  # well before a terminate would come
        await connect_until(child, lines, "ready")
    assert child.returncode == 0
    assert lines.lines == ["ready", "stdin closed"]


async def test_terminated_when_it_ignores_eof() -> None:
    lines = Lines()
    child = acp.Subprocess(
        python(STEPS.format(setup="", on_eof="time.sleep(60)")), stderr=lines, grace_period=GRACE
    )
    await connect_until(child, lines, "ready")
    assert child.returncode == -signal.SIGTERM
    # (Whether it said "stdin closed" within the short grace period depends
    # on the machine's load: not asserted.)
    assert lines.lines[0] == "ready"


async def test_killed_when_it_ignores_sigterm() -> None:
    lines = Lines()
    setup = "signal.signal(signal.SIGTERM, lambda *a: say('SIGTERM ignored'))"
    child = acp.Subprocess(
        python(STEPS.format(setup=setup, on_eof="while True: time.sleep(60)")),
        stderr=lines,
        grace_period=GRACE,
    )
    await connect_until(child, lines, "ready")
    # The SIGTERM handler was installed before "ready": only SIGKILL ends it.
    assert child.returncode == -signal.SIGKILL
    assert lines.lines[0] == "ready"
    assert set(lines.lines) <= {"ready", "stdin closed", "SIGTERM ignored"}


async def test_output_written_on_the_way_out_does_not_kill_it() -> None:
    """Its stdout keeps being read during shutdown: a child that writes a lot
    after its stdin ended neither blocks on a full pipe nor dies of SIGPIPE."""
    lines = Lines()
    on_eof = "sys.stdout.buffer.write(b'x' * 1_000_000); sys.stdout.flush(); say('wrote')"
    child = acp.Subprocess(
        python(STEPS.format(setup="", on_eof=on_eof)), stderr=lines, grace_period=TIMEOUT
    )
    with anyio.fail_after(TIMEOUT / 2):
        await connect_until(child, lines, "ready")
    assert child.returncode == 0
    assert lines.lines == ["ready", "stdin closed", "wrote"]


async def test_shut_down_when_the_connection_is_cancelled() -> None:
    lines = Lines()
    child = acp.Subprocess(
        python(STEPS.format(setup="", on_eof="sys.exit(3)")), stderr=lines, grace_period=TIMEOUT
    )

    async def main(cx: Any) -> None:
        await lines.wait_for("ready")
        scope.cancel()
        await anyio.sleep_forever()

    with anyio.CancelScope() as scope:
        await acp.UntypedRole.builder().connect_with(child, main)
    assert scope.cancelled_caught
    assert child.returncode == 3
    assert lines.lines == ["ready", "stdin closed"]


async def test_stderr_lines_go_to_a_callback() -> None:
    lines = Lines()
    code = (
        "import sys; w = sys.stderr.buffer.write"
        "; w('one\\ntwo é ✓\\n'.encode()); w(b'half'); sys.stderr.flush()"
        "; w(b' a line\\n\\xff bad byte\\nno newline at the end')"
    )
    child = acp.Subprocess(python(code), stderr=lines)
    async with acp.UntypedRole.builder().connect(child):
        await lines.wait_for("half a line")
    assert lines.lines == [
        "one",
        "two é ✓",
        "half a line",
        "\ufffd bad byte",  # invalid UTF-8 is replaced, never fatal
        "no newline at the end",
    ]


async def test_a_failing_stderr_callback_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def callback(line: str) -> None:
        raise RuntimeError(f"cannot take {line!r}")

    child = acp.Subprocess(python("import sys; sys.stderr.write('x\\n')"), stderr=callback)
    async with acp.UntypedRole.builder().connect(child):
        pass
    assert child.returncode == 0
    assert "cannot take 'x'" in caplog.text


async def test_stderr_passes_through_to_our_stderr_fd(capfd: pytest.CaptureFixture[str]) -> None:
    child = acp.Subprocess(python("import sys; sys.stderr.write('to the real stderr\\n')"))
    async with acp.UntypedRole.builder().connect(child):
        pass
    assert child.returncode == 0
    assert "to the real stderr" in capfd.readouterr().err


async def test_stderr_is_copied_into_an_in_memory_sys_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """sys.stderr without a file descriptor (capsys, a notebook): copied into it."""
    child = acp.Subprocess(python("import sys; sys.stderr.write('into sys.stderr\\n')"))
    async with acp.UntypedRole.builder().connect(child):
        pass
    assert child.returncode == 0
    assert capsys.readouterr().err == "into sys.stderr\n"


async def test_env_and_cwd(tmp_path: Any) -> None:
    lines = Lines()
    code = "import os, sys; sys.stderr.write(os.getcwd() + ' ' + os.environ['ACP_TEST'] + '\\n')"
    child = acp.Subprocess(python(code), env={"ACP_TEST": "yes"}, cwd=tmp_path, stderr=lines)
    async with acp.UntypedRole.builder().connect(child):
        await lines.wait_for(f"{tmp_path} yes")


async def test_a_real_agent_over_the_pipes(anyio_backend: str) -> None:
    agent = acp.Subprocess(peer_cmd(anyio_backend))

    async def main(peer: Peer) -> None:
        await peer.echo()
        assert agent.process is not None and agent.process.poll() is None

    await as_client(agent, main)
    assert agent.returncode == 0


async def test_a_missing_program_fails_to_connect() -> None:
    with pytest.raises(FileNotFoundError):
        await acp.UntypedRole.builder().connect_to(acp.Subprocess(["/nonexistent/agent"]))


def test_arguments_are_checked() -> None:
    with pytest.raises(TypeError):
        acp.Subprocess("python agent.py")
    with pytest.raises(ValueError, match="callable"):
        acp.Subprocess(["agent"], stderr=-1)  # subprocess.PIPE: nobody would read it
    with pytest.raises(ValueError):
        acp.Subprocess(["agent"], grace_period=-1)
