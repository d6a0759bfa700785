"""``acp-fast trace``: record an editor-agent conversation, and view traces.

``acp-fast trace --out FILE -- AGENT_CMD...`` runs the agent and sits between
it and the editor on stdio: the bytes are forwarded as they are, both ways,
and every line is recorded to FILE (docs/tracing.md). The editor runs this
command instead of the agent's. On SIGTERM or SIGINT the agent is stopped,
the trace is closed whole (summary line last), and it exits 128 + N.

``acp-fast trace view FILE`` serves the trace viewer on 127.0.0.1 and opens
it in a browser (``--no-open`` does not); ``--live`` follows a file still
being recorded; ``--html OUT`` writes one self-contained page instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ("USAGE", "add_help_arguments", "main")

USAGE = (
    "%(prog)s --out FILE -- AGENT_CMD...\n"
    "       %(prog)s view FILE [--html OUT] [--live] [--port PORT] [--no-open]"
)


def main(argv: Sequence[str]) -> int:
    """``acp-fast trace ...`` (``argv`` without the word ``trace``)."""
    argv = list(argv)
    if argv and argv[0] == "view":
        return _view(argv[1:])
    return _record(argv)


def add_help_arguments(parser: argparse.ArgumentParser) -> None:
    """What ``acp-fast trace --help`` shows: recording's options and view's."""
    parser.usage = USAGE
    _add_record_arguments(parser)
    parser.add_argument(
        "command", nargs="*", metavar="AGENT_CMD", help="the agent's command line, after --"
    )
    view = parser.add_argument_group(
        "acp-fast trace view FILE", "show the trace FILE (NDJSON) as a sequence diagram"
    )
    _add_view_arguments(view)


def _add_record_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", metavar="FILE", help="the trace file to write (truncated first); required"
    )


def _add_view_arguments(group: argparse._ActionsContainer) -> None:
    group.add_argument("--html", metavar="OUT", help="write a self-contained page to OUT")
    group.add_argument("--live", action="store_true", help="follow the file as it grows")
    group.add_argument(
        "--port", type=_port, default=0, help="serve on this port of 127.0.0.1 (default: any)"
    )
    group.add_argument("--no-open", action="store_true", help="do not open a browser")


def _port(text: str) -> int:
    """``--port``, checked as it is parsed."""
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"wants a port 0-65535, not {text!r}")
    return int(text)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parse_args``, but an unknown option is reported before a missing
    argument (argparse reports the missing one first)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _record(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fast trace",
        usage=USAGE,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_record_arguments(parser)
    if "--" in argv:
        split = argv.index("--")
        options, command = argv[:split], argv[split + 1 :]
    else:
        options, command = argv, []
    args = _parse(parser, options)
    if args.out is None:
        parser.error("the following arguments are required: --out")
    if not command:
        parser.error("give the agent command after --")
    from ._trace_tap import tap

    return tap(args.out, command)


def _view(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fast trace view",
        usage="%(prog)s FILE [--html OUT] [--live] [--port PORT] [--no-open]",
        description="Show a trace file as a sequence diagram.",
    )
    parser.add_argument("file", nargs="?", help="an NDJSON trace (docs/tracing.md)")
    _add_view_arguments(parser)
    args = _parse(parser, argv)
    if args.file is None:
        parser.error("the following arguments are required: FILE")
    from ._viewer import NoEvents, export_html, serve

    if args.html:
        try:
            count = export_html(args.file, args.html, empty=False)
        except NoEvents:
            print(
                f"acp-fast trace view: {args.file} holds no trace events; nothing written",
                file=sys.stderr,
            )
            return 2
        except OSError as exc:
            print(f"acp-fast trace view: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {args.html} ({count} events)")
        return 0
    if not os.path.exists(args.file) and not args.live:
        print(f"acp-fast trace view: no such file: {args.file}", file=sys.stderr)
        return 2
    return serve(args.file, port=args.port, live=args.live, open_browser=not args.no_open)
