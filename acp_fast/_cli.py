"""The ``acp-fast`` command line.

Each subcommand is one function registered with ``@command(...)``: it is given
its own argparse parser, adds its options, and returns the function that runs
it. Everything a subcommand needs beyond the core is imported inside that
function, so ``acp-fast example-agent`` pays only for what it uses::

    @command("name", "one-line summary", "A paragraph for --help.", ["acp-fast name -x"])
    def _name(parser: argparse.ArgumentParser) -> Runner:
        parser.add_argument("-x", action="store_true")

        def run(args: argparse.Namespace) -> int:
            from .somewhere import do_it

            return do_it(args.x)

        return run

``main`` turns the usual ways a command line ends into quiet exits: a closed
stdout (``acp-fast demo | head``) exits 141, Ctrl-C exits 130, and a missing
optional dependency prints one line naming the extra that brings it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # argparse is imported when a parser is built: ``example-agent``, which an
    # editor spawns for every window, is parsed without it (``_agent_backend``).
    import argparse
    from pathlib import Path

__all__ = ("MissingExtra", "Runner", "UsageError", "command", "main", "require")

#: Runs a parsed subcommand; returns the exit status.
Runner = Callable[["argparse.Namespace"], int]
#: Adds a subcommand's options to its parser and returns its runner.
Setup = Callable[["argparse.ArgumentParser"], Runner]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


class MissingExtra(Exception):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the '{extra}' extra: pip install 'acp-fast[{extra}]'")


class UsageError(Exception):
    """A command's arguments do not make sense together: reported as argparse
    reports its own errors (the command's usage, one line, status 2)."""


def require(module: str, *, extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` unless ``module`` can be imported."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtra(what, extra)


class _Command:
    # A plain class: a dataclass costs start-up time for every command run.
    __slots__ = ("description", "examples", "name", "setup", "summary")

    def __init__(
        self, name: str, summary: str, description: str, examples: tuple[str, ...], setup: Setup
    ) -> None:
        self.name = name
        self.summary = summary
        self.description = description
        self.examples = examples
        self.setup = setup


_COMMANDS: list[_Command] = []


def command(
    name: str, summary: str, description: str, examples: Sequence[str] = ()
) -> Callable[[Setup], Setup]:
    """Register a subcommand: ``summary`` for the overview, the rest for its ``--help``."""

    def register(setup: Setup) -> Setup:
        _COMMANDS.append(_Command(name, summary, description, tuple(examples), setup))
        return setup

    return register


_BACKENDS = ("asyncio", "trio")


def _add_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=_BACKENDS,
        default="asyncio",
        help="event loop to run on (default: asyncio; trio needs the 'trio' extra)",
    )


def _require_backend(backend: str, what: str) -> None:
    if backend == "trio":
        require("trio", extra="trio", what=f"{what} --backend trio")


# --- subcommands ------------------------------------------------------------------


@command(
    "demo",
    "the bundled client drives the bundled agent over stdio",
    "Spawn the example agent as a subprocess and drive it as an editor would: a "
    "streamed prompt with a permission request and a file write, a turn stopped with "
    "session/cancel, and a request stopped with $/cancel_request.",
    ["acp-fast demo", "acp-fast demo --backend trio"],
)
def _demo(parser: argparse.ArgumentParser) -> Runner:
    _add_backend(parser)

    def run(args: argparse.Namespace) -> int:
        _require_backend(args.backend, "acp-fast demo")
        from .examples.demo import run_demo

        return run_demo(backend=args.backend)

    return run


@command(
    "example-agent",
    "a real ACP agent on stdio, for any ACP client",
    "Serve the bundled example agent on stdin/stdout until the client closes them. "
    "It echoes prompts, asks for permission, writes a file and honours cancellation.",
    ["acp-fast example-agent", "acp-fast conductor --agent 'acp-fast example-agent'"],
)
def _example_agent(parser: argparse.ArgumentParser) -> Runner:
    _add_backend(parser)

    def run(args: argparse.Namespace) -> int:
        return _run_example_agent(args.backend)

    return run


def _run_example_agent(backend: str) -> int:
    _require_backend(backend, "acp-fast example-agent")
    from .examples.agent import run_example_agent

    return run_example_agent(backend=backend)


def _agent_backend(arguments: Sequence[str]) -> str | None:
    """The backend of ``example-agent [--backend NAME]``; None for any other line.

    An editor spawns the agent for every window it opens, and building the
    parser (argparse, its help formatter, every subcommand) costs about 5 ms
    of the time to the first answer (benchmarks/README.md, "Start-up"). Any
    other spelling, ``--help`` or an error goes through argparse as before.
    """
    if arguments[:1] != ["example-agent"]:
        return None
    rest = arguments[1:]
    if not rest:
        return "asyncio"
    if len(rest) == 2 and rest[0] == "--backend":
        backend = rest[1]
    elif len(rest) == 1 and rest[0].startswith("--backend="):
        backend = rest[0].partition("=")[2]
    else:
        return None
    return backend if backend in _BACKENDS else None


@command(
    "example-proxy",
    "the bundled example proxy on stdio (under a conductor)",
    "Serve the bundled example proxy on stdio. It marks prompt text on the way to the "
    "agent and agent text on the way back, and forwards everything else unchanged; "
    "it runs under a conductor, which connects it to its successor.",
    [
        "acp-fast conductor --proxy 'acp-fast example-proxy' --agent 'acp-fast example-agent'",
        "acp-fast conductor --proxy \"acp-fast example-proxy --chunk-prefix '| '\" "
        "--agent 'acp-fast example-agent'",
    ],
)
def _example_proxy(parser: argparse.ArgumentParser) -> Runner:
    _add_backend(parser)
    parser.add_argument(
        "--prompt-prefix", default="", metavar="TEXT", help="put TEXT before each prompt text block"
    )
    parser.add_argument(
        "--chunk-prefix", default=">", metavar="TEXT", help="put TEXT before each agent text chunk"
    )

    def run(args: argparse.Namespace) -> int:
        _require_backend(args.backend, "acp-fast example-proxy")
        from .examples.proxy import run_example_proxy

        return run_example_proxy(
            backend=args.backend,
            prompt_prefix=args.prompt_prefix,
            chunk_prefix=args.chunk_prefix,
        )

    return run


@command(
    "conductor",
    "serve a chain of proxies in front of an agent, as one agent on stdio",
    "Run each --proxy command and the --agent command as subprocesses, chained in the "
    "order given, and serve the chain as one ACP agent on stdio. Each command is one "
    "string, split like a shell would (quote it).",
    ["acp-fast conductor --proxy 'acp-fast example-proxy' --agent 'acp-fast example-agent'"],
)
def _conductor(parser: argparse.ArgumentParser) -> Runner:
    parser.add_argument(
        "--proxy", action="append", default=[], metavar="CMD", help="a proxy command"
    )
    parser.usage = "%(prog)s [--proxy CMD]... --agent CMD [--trace FILE] [--backend NAME]"
    # Checked in run(), so that an unknown option is reported first.
    parser.add_argument("--agent", metavar="CMD", help="the agent command (required)")
    parser.add_argument(
        "--trace", metavar="FILE", help="record every hop's messages to FILE (docs/tracing.md)"
    )
    _add_backend(parser)

    def run(args: argparse.Namespace) -> int:
        if args.agent is None:
            raise UsageError("the following arguments are required: --agent")
        _require_backend(args.backend, "acp-fast conductor")
        from .conductor import run_conductor

        return run_conductor(args.proxy, args.agent, backend=args.backend, trace=args.trace)

    return run


@command(
    "serve",
    "serve an agent to remote clients over HTTP and WebSocket",
    "Serve an ACP agent over Streamable HTTP (+SSE) and WebSocket on one path: a stdio "
    "agent command after `--` (one subprocess per connection), or a Python factory "
    "`module:name` (a BaseAgent class, or a function returning an agent or a builder). "
    "Binds 127.0.0.1 unless told otherwise; the bearer token can also come from "
    "ACP_FAST_TOKEN (docs/remote.md).",
    [
        "acp-fast serve --http 127.0.0.1:8000 -- acp-fast example-agent",
        "acp-fast serve --http 127.0.0.1:8000 --token s3cret mypackage.agent:MyAgent",
    ],
)
def _serve(parser: argparse.ArgumentParser) -> Runner:
    from ._serve_cli import add_arguments

    add_arguments(parser)

    def run(args: argparse.Namespace) -> int:
        require("uvicorn", extra="http", what="acp-fast serve")
        from ._serve_cli import run_serve

        return run_serve(args)

    return run


@command(
    "trace",
    "record an editor-agent conversation, or view a trace",
    "acp-fast trace --out FILE -- AGENT_CMD... runs the agent and sits between it and "
    "the editor on stdio, forwarding every byte and recording every line to FILE "
    "(docs/tracing.md); the editor runs this command instead of the agent's. It exits "
    "as the agent did; on SIGTERM or SIGINT it stops the agent, closes the trace "
    "whole and exits 128+N. "
    "acp-fast trace view FILE serves the trace viewer on 127.0.0.1 (--live follows a "
    "file still being recorded, --html OUT writes one self-contained page, --no-open "
    "opens no browser).",
    [
        "acp-fast trace --out session.ndjson -- acp-fast example-agent",
        "acp-fast trace view session.ndjson",
        "acp-fast trace view session.ndjson --html session.html",
    ],
)
def _trace(parser: argparse.ArgumentParser) -> Runner:
    # Its arguments hold a command line of their own: main() hands them to
    # the trace module before argparse sees them; this entry is for --help,
    # which shows the options of both forms.
    from ._trace_cli import add_help_arguments

    add_help_arguments(parser)

    def run(args: argparse.Namespace) -> int:
        from ._trace_cli import main as trace_main

        return trace_main([])

    return run


@command(
    "bench",
    "throughput and start-up, side by side with the official SDK",
    "Throughput and start-up time of acp_fast (compiled and pure core) beside the "
    "official Python SDK, measured in one run; every configuration runs in fresh "
    "processes. The official SDK comes with the 'bench' extra: "
    "pip install 'acp-fast[bench]'.",
    ["acp-fast bench --quick", "acp-fast bench --backend asyncio --backend trio --json"],
)
def _bench(parser: argparse.ArgumentParser) -> Runner:
    from ._bench._runner import add_arguments

    add_arguments(parser)

    def run(args: argparse.Namespace) -> int:
        for backend in args.backend or ():
            _require_backend(backend, "acp-fast bench")
        from ._bench._runner import run as run_bench

        return run_bench(args)

    return run


@command(
    "codegen",
    "regenerate the typed bindings from the JSON Schema (checkout or sdist)",
    "Regenerate acp_fast/schema/v*.py from the JSON Schema files in schema/, in a "
    "source tree (a git checkout or an unpacked sdist: the installed package's own "
    "tree, else the current directory or one above it). Needs the 'codegen' extra: "
    "pip install 'acp-fast[codegen]'.",
    [
        "acp-fast codegen",
        "acp-fast codegen --check",
        "acp-fast codegen --schema-dir ~/acp/schema --out /tmp/schema",
    ],
)
def _codegen(parser: argparse.ArgumentParser) -> Runner:
    from pathlib import Path

    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and list the stale files if any differ from a fresh run",
    )
    parser.add_argument(
        "--schema-dir",
        type=Path,
        metavar="DIR",
        help="schemas in the upstream layout (default: the source tree's schema/)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="directory for the generated modules (default: the source tree's acp_fast/schema/)",
    )

    def run(args: argparse.Namespace) -> int:
        root = _source_tree()
        if root is None:
            print(
                "acp-fast codegen: no source tree found (a checkout or an unpacked sdist, "
                "with codegen/ and schema/); run it from one",
                file=sys.stderr,
            )
            return 2
        for module in ("datamodel_code_generator", "jsonschema", "ruff"):
            require(module, extra="codegen", what="acp-fast codegen")
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
        from codegen.__main__ import main as codegen_main

        argv = ["--root", str(root)]
        if args.check:
            argv.append("--check")
        if args.schema_dir is not None:
            argv += ["--schema-dir", str(args.schema_dir)]
        if args.out is not None:
            argv += ["--out", str(args.out)]
        return codegen_main(argv)

    return run


def _source_tree() -> Path | None:
    """The tree holding ``codegen/`` and ``schema/`` beside ``acp_fast/``."""
    from pathlib import Path

    candidates = [Path(__file__).resolve().parent.parent]
    here = Path.cwd().resolve()
    candidates += [here, *here.parents]
    for root in candidates:
        if (root / "codegen" / "__main__.py").is_file() and (root / "schema").is_dir():
            return root
    return None


# --- the command line ---------------------------------------------------------------


def version_text() -> str:
    """``acp-fast --version``: the version, which core runs, and the Python."""
    import platform

    from ._core import IMPLEMENTATION
    from ._version import __version__

    core = "compiled (Cython)" if IMPLEMENTATION == "c" else "pure Python"
    return (
        f"acp-fast {__version__} (core: {core}; "
        f"{platform.python_implementation()} {platform.python_version()})"
    )


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand.

    Only the subcommand named in ``argv`` (the first argument that is not an
    option) gets its options, so that no other command's imports are paid for.
    """
    import argparse

    from ._cli_help import HelpFormatter, VersionAction

    chosen = _chosen(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="acp-fast",
        description="The Agent Client Protocol (ACP) for Python: examples, a conductor, "
        "benchmarks and the code generator.",
        epilog="Run 'acp-fast COMMAND --help' for a command's options and examples.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=VersionAction)
    # Not required here: main() reports an unknown option before a missing
    # command, which argparse would report first.
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    for entry in _COMMANDS:
        examples = "\n".join(f"  {line}" for line in entry.examples)
        sub = commands.add_parser(
            entry.name,
            help=entry.summary,
            description=entry.description,
            epilog=f"examples:\n{examples}" if examples else None,
            formatter_class=HelpFormatter,
        )
        sub.set_defaults(parser=sub)
        if chosen in (None, entry.name):
            sub.set_defaults(run=entry.setup(sub))
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    names = {entry.name for entry in _COMMANDS}
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in names else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``acp-fast``; returns the exit status."""
    try:
        arguments = sys.argv[1:] if argv is None else list(argv)
        if arguments[:1] == ["trace"] and arguments[1:2] not in (["-h"], ["--help"]):
            from ._trace_cli import main as trace_main

            return trace_main(arguments[1:])
        backend = _agent_backend(arguments)
        if backend is not None:
            status = _run_example_agent(backend)
        else:
            status = _parse_and_run(build_parser(argv), arguments)
        sys.stdout.flush()
        return status
    except MissingExtra as exc:
        print(f"acp-fast: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _interrupted()
        return EXIT_INTERRUPTED
    except BaseException as exc:
        if _only(exc, BrokenPipeError):
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        if _only(exc, KeyboardInterrupt):
            _interrupted()
            return EXIT_INTERRUPTED
        raise


def _interrupted() -> None:
    """A Ctrl-C ends the command quietly. On trio it may land between a
    request's sending and its ``await``; the request, dropped as the frames
    holding it are freed, is then no mistake to warn about (its connection
    has ended with the command)."""
    requests = sys.modules.get("acp_fast._async.requests")
    if requests is not None:
        import warnings

        warnings.filterwarnings("ignore", category=requests.AbandonedRequestWarning)


def _parse_and_run(parser: argparse.ArgumentParser, arguments: list[str]) -> int:
    """Parse ``arguments`` and run the command; usage errors exit 2 with the
    usage of the command they belong to."""
    args, extra = parser.parse_known_args(arguments)
    used: argparse.ArgumentParser = getattr(args, "parser", parser)
    if extra:
        before = args.command is None or arguments.index(extra[0]) < arguments.index(args.command)
        (parser if before else used).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.error("give a COMMAND ('acp-fast --help' lists them)")
    try:
        return args.run(args)  # type: ignore[no-any-return]
    except UsageError as exc:
        used.error(str(exc))


def _only(exc: BaseException, kind: type[BaseException]) -> bool:
    """``exc`` is ``kind``, or a group (of groups) holding only ``kind``."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple) and inner:
        return all(_only(item, kind) for item in inner)
    return isinstance(exc, kind)


def _silence_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so that the interpreter's
    # final flush does not report the same broken pipe again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
