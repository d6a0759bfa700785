"""The tap of ``acp-fast trace --out FILE -- AGENT_CMD...`` (docs/tracing.md).

The agent runs as a child; its stdin and stdout pass through us, both ways,
byte for byte, and every line is recorded. Editor to agent is copied in a
thread, agent to editor in another, and the main thread only waits, so a
signal interrupts the waiting and never a copy half done.

How it ends (docs/tracing.md, "Recording a trace"):

* the agent exits: the rest of its output is forwarded, the trace closed
  (summary line last), and the exit status is the agent's: ``rc``, or
  ``128 + N`` when a signal N ended it;
* SIGTERM or SIGINT: the agent is sent SIGTERM, and SIGKILL when it has not
  exited a grace period later; what it wrote until then is forwarded and
  recorded, the trace closed, and the exit status is ``128 + N``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import BinaryIO

from ._async.observe import INCOMING, OUTGOING
from ._async.trace import TraceWriter

__all__ = ("GRACE_SECONDS", "exit_status", "tap")

#: How long a signalled tap waits for the agent after SIGTERM, before SIGKILL.
GRACE_SECONDS = 2.0
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_HOP = "client-agent"
_CHUNK = 64 * 1024

Record = Callable[[str, bytes], None]


class _Signalled(BaseException):
    """Raised in the main thread by a SIGTERM or SIGINT handler."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_status(returncode: int) -> int:
    """The shell's exit status for a child's ``returncode`` (``-N``: signal N)."""
    return 128 - returncode if returncode < 0 else returncode


def tap(out: str, command: Sequence[str]) -> int:
    """Run ``command`` between our stdin/stdout and record to ``out``; the exit status."""
    try:
        recorder = _Recorder(TraceWriter(out))
    except OSError as exc:
        print(f"acp-fast trace: cannot write the trace: {exc}", file=sys.stderr)
        return 2
    agent: subprocess.Popen[bytes] | None = None
    downstream: threading.Thread | None = None
    with _signals_raise():
        try:
            try:
                agent = subprocess.Popen(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
                )
            except OSError as exc:
                # Worded as serve words it: the command, not the errno.
                why = (
                    f"no such command: {command[0]!r}"
                    if isinstance(exc, FileNotFoundError)
                    else str(exc)
                )
                print(f"acp-fast trace: cannot start the agent: {why}", file=sys.stderr)
                return 2
            downstream = _start(agent, recorder.record)
            downstream.join()
            status = exit_status(agent.wait())
            _ignore_signals()
        except _Signalled as signalled:
            # The signals are ignored from here on: nothing interrupts the
            # shutdown, and the trace is closed whole.
            status = 128 + signalled.signum
            if agent is not None:
                _stop(agent)
            if downstream is not None:
                downstream.join()  # the agent's last lines, forwarded and recorded
        finally:
            _ignore_signals()
            recorder.close()
    return status


class _Recorder:
    """The trace writer, shared by both directions; takes nothing once closed."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.lock = threading.Lock()
        self.closed = False

    def record(self, direction: str, line: bytes) -> None:
        sender, receiver = ("Client", "Agent") if direction is OUTGOING else ("Agent", "Client")
        with self.lock:
            if not self.closed:
                self.writer.record(direction, _HOP, sender, receiver, line)

    def close(self) -> None:
        with self.lock:
            self.closed = True
        self.writer.close()  # what is queued, then the summary line
        if self.writer.dropped:
            print(f"acp-fast trace: {self.writer.dropped} messages not recorded", file=sys.stderr)


def _start(agent: subprocess.Popen[bytes], record: Record) -> threading.Thread:
    """Start copying both ways; returns the agent-to-editor thread."""
    assert agent.stdin is not None and agent.stdout is not None
    # Editor to agent, closing the agent's input when the editor's ends. A
    # daemon: it may still wait on our stdin when the agent is gone.
    upstream = threading.Thread(target=_pump, args=(0, agent.stdin, OUTGOING, record), daemon=True)
    downstream = threading.Thread(
        target=_pump, args=(agent.stdout.fileno(), None, INCOMING, record), daemon=True
    )
    upstream.start()
    downstream.start()
    return downstream


def _stop(agent: subprocess.Popen[bytes]) -> None:
    """SIGTERM, a grace period, SIGKILL; the agent is waited for."""
    try:
        agent.terminate()
        agent.wait(GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent.wait()


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGINT raise ``_Signalled`` in the main thread, once:
    then they are ignored, until the previous handlers come back."""
    previous = {signum: signal.getsignal(signum) for signum in _SIGNALS}

    def handler(signum: int, frame: FrameType | None) -> None:
        _ignore_signals()
        raise _Signalled(signum)

    for signum in _SIGNALS:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


def _ignore_signals() -> None:
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _pump(source: int, target: BinaryIO | None, direction: str, record: Record) -> None:
    """Copy ``source`` to ``target`` (our stdout when None), recording each
    line; then closes ``target``."""
    partial = b""
    while True:
        try:
            data = os.read(source, _CHUNK)
        except OSError:
            data = b""
        if not data:
            break
        # Recorded before it is passed on: the answer to a line, which the
        # other direction records, can only come after it (docs/tracing.md).
        lines = (partial + data).split(b"\n")
        partial = lines.pop()
        for line in lines:
            if line.strip():
                record(direction, line)
        try:
            _write_all(1 if target is None else target.fileno(), data)
        except OSError:
            break  # the reader went away; what it missed is still recorded
    if partial.strip():
        record(direction, partial)
    if target is not None:
        try:
            target.close()
        except OSError:
            pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
