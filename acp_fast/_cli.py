"""The ``acp-fast`` command line.

``acp-fast demo``            the bundled client drives the bundled agent over stdio
``acp-fast example-agent``   run the bundled example agent on stdio
``acp-fast example-proxy``   run the bundled example proxy on stdio (under a conductor)
``acp-fast conductor``       serve a chain of proxies in front of an agent on stdio
``acp-fast bench``           throughput table: acp_fast (both cores) beside the official SDK
``acp-fast serve``           serve an agent to remote clients over HTTP and WebSocket
``acp-fast codegen``         regenerate the typed bindings (a source checkout only)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ("main",)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acp-fast", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="drive the example agent over stdio and show it")
    demo.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")

    agent = commands.add_parser("example-agent", help="run the example agent on stdio")
    agent.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")

    proxy = commands.add_parser(
        "example-proxy", help="run the example proxy on stdio (under a conductor)"
    )
    proxy.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    proxy.add_argument(
        "--prompt-prefix", default="", metavar="TEXT", help="put TEXT before each prompt text block"
    )
    proxy.add_argument(
        "--chunk-prefix", default=">", metavar="TEXT", help="put TEXT before each agent text chunk"
    )

    conductor = commands.add_parser(
        "conductor",
        help="serve proxies in front of an agent, as one agent on stdio",
        description="Run each --proxy command and the --agent command as subprocesses, "
        "chained in the order given, and serve the chain as one ACP agent on stdio. "
        "Each command is one string, split like a shell would (quote it).",
    )
    conductor.add_argument(
        "--proxy", action="append", default=[], metavar="CMD", help="a proxy command"
    )
    conductor.add_argument("--agent", required=True, metavar="CMD", help="the agent command")
    conductor.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")

    from ._bench._runner import DESCRIPTION, add_arguments

    bench = commands.add_parser(
        "bench", help="throughput table: acp_fast beside the official SDK", description=DESCRIPTION
    )
    add_arguments(bench)

    from ._serve_cli import add_serve_command

    add_serve_command(commands)

    codegen = commands.add_parser("codegen", help="regenerate acp_fast/schema from schema/")
    codegen.add_argument("args", nargs=argparse.REMAINDER)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return int(args.run(args))
    if args.command == "demo":
        from .examples.demo import run_demo

        return run_demo(backend=args.backend)
    if args.command == "example-agent":
        from .examples.agent import run_example_agent

        return run_example_agent(backend=args.backend)
    if args.command == "example-proxy":
        from .examples.proxy import run_example_proxy

        return run_example_proxy(
            backend=args.backend,
            prompt_prefix=args.prompt_prefix,
            chunk_prefix=args.chunk_prefix,
        )
    if args.command == "conductor":
        from .conductor import run_conductor

        return run_conductor(args.proxy, args.agent, backend=args.backend)
    if args.command == "bench":
        from ._bench._runner import run as run_bench

        return run_bench(args)
    if args.command == "codegen":
        try:
            from codegen.__main__ import main as codegen_main
        except ImportError:
            print(
                "acp-fast codegen runs from a source checkout (the codegen/ folder)",
                file=sys.stderr,
            )
            return 2
        return int(codegen_main(args.args) or 0)
    parser.error(f"unknown command {args.command!r}")


if __name__ == "__main__":
    raise SystemExit(main())
