"""The ``acp-fast`` command line.

``acp-fast demo``            the bundled client drives the bundled agent over stdio
``acp-fast example-agent``   run the bundled example agent on stdio
``acp-fast bench``           throughput table: acp_fast (both cores) beside the official SDK
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

    codegen = commands.add_parser("codegen", help="regenerate acp_fast/schema from schema/")
    codegen.add_argument("args", nargs=argparse.REMAINDER)

    args = parser.parse_args(argv)
    if args.command == "demo":
        from .examples.demo import run_demo

        return run_demo(backend=args.backend)
    if args.command == "example-agent":
        from .examples.agent import run_example_agent

        return run_example_agent(backend=args.backend)
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
