"""``acp-fast trace``: record an editor-agent conversation, and view traces.

``acp-fast trace --out FILE -- AGENT_CMD...`` runs the agent and sits between
it and the editor on stdio: the bytes are forwarded as they are, both ways,
and every line is recorded to FILE (docs/tracing.md). The editor runs this
command instead of the agent's.

``acp-fast trace view FILE`` serves the trace viewer on 127.0.0.1 and opens
it in a browser (``--no-open`` does not); ``--live`` follows a file still
being recorded; ``--html OUT`` writes one self-contained page instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import BinaryIO

from ._async.observe import INCOMING, OUTGOING
from ._async.trace import TraceWriter

__all__ = ("main",)

_HOP = "client-agent"
_CHUNK = 64 * 1024


def main(argv: Sequence[str]) -> int:
    """``acp-fast trace ...`` (``argv`` without the word ``trace``)."""
    argv = list(argv)
    if argv and argv[0] == "view":
        return _view(argv[1:])
    return _record(argv)


def _record(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fast trace",
        usage="acp-fast trace --out FILE -- AGENT_CMD...\n       acp-fast trace view FILE",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, metavar="FILE", help="the trace file to write")
    if "--" in argv:
        split = argv.index("--")
        options, command = argv[:split], argv[split + 1 :]
    else:
        options, command = argv, []
    args = parser.parse_args(options)
    if not command:
        parser.error("give the agent command after --")
    writer = TraceWriter(args.out)
    try:
        agent = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as exc:
        writer.close()
        print(f"acp-fast trace: cannot start the agent: {exc}", file=sys.stderr)
        return 2
    assert agent.stdin is not None and agent.stdout is not None
    lock = threading.Lock()

    def record(direction: str, line: bytes) -> None:
        sender, receiver = ("Client", "Agent") if direction is OUTGOING else ("Agent", "Client")
        with lock:
            writer.record(direction, _HOP, sender, receiver, line)

    # Editor to agent: in a thread, so that the agent's output is forwarded
    # meanwhile; closing the agent's input when the editor's ends.
    upstream = threading.Thread(
        target=_pump,
        args=(sys.stdin.buffer.fileno(), agent.stdin, OUTGOING, record),
        daemon=True,
    )
    upstream.start()
    _pump(agent.stdout.fileno(), None, INCOMING, record)
    status = agent.wait()
    writer.close()
    if writer.dropped:
        print(f"acp-fast trace: {writer.dropped} messages not recorded", file=sys.stderr)
    return status


def _pump(
    source: int,
    target: BinaryIO | None,
    direction: str,
    record: object,
) -> None:
    """Copy ``source`` to ``target`` (our stdout when None), recording each line."""
    assert callable(record)
    partial = b""
    while True:
        try:
            data = os.read(source, _CHUNK)
        except OSError:
            data = b""
        if not data:
            break
        try:
            if target is None:
                _write_all(1, data)
            else:
                target.write(data)
        except OSError:
            break  # the reader went away; what it missed is still recorded
        finally:
            lines = (partial + data).split(b"\n")
            partial = lines.pop()
            for line in lines:
                if line.strip():
                    record(direction, line)
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


def _view(argv: list[str]) -> int:
    from ._viewer import export_html, serve

    parser = argparse.ArgumentParser(
        prog="acp-fast trace view", description="Show a trace file as a sequence diagram."
    )
    parser.add_argument("file", help="an NDJSON trace (docs/tracing.md)")
    parser.add_argument("--html", metavar="OUT", help="write a self-contained page to OUT")
    parser.add_argument("--live", action="store_true", help="follow the file as it grows")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any)")
    parser.add_argument("--no-open", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if args.html:
        try:
            count = export_html(args.file, args.html)
        except OSError as exc:
            print(f"acp-fast trace view: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.html} ({count} events)")
        return 0
    if not os.path.exists(args.file) and not args.live:
        print(f"acp-fast trace view: no such file: {args.file}", file=sys.stderr)
        return 1
    return serve(args.file, port=args.port, live=args.live, open_browser=not args.no_open)
