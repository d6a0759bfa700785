"""``acp-fast serve``: an agent over Streamable HTTP and WebSocket (docs/remote.md).

``acp-fast serve --http 127.0.0.1:8000 -- my-agent --stdio``  bridge a stdio agent
``acp-fast serve --http 127.0.0.1:8000 package.module:Factory``  serve a Python agent
"""

from __future__ import annotations

import argparse
import importlib
import os
from typing import Any

__all__ = ("add_arguments", "run_serve")


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The options of ``acp-fast serve``."""
    serve.add_argument(
        "--http",
        default="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="the address to listen on (default: 127.0.0.1:8000; [::1]:PORT for IPv6)",
    )
    serve.add_argument(
        "--path", default="/acp", help="the URL path of the endpoint (default: /acp)"
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("ACP_FAST_TOKEN"),
        help="require Authorization: Bearer TOKEN (default: $ACP_FAST_TOKEN, else none)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients use (besides loopback); '*' allows any",
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an Origin a browser page may connect from (default: none); '*' allows any",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="close an HTTP connection with no request or reader this long (default: 300)",
    )
    serve.add_argument(
        "target",
        nargs=argparse.REMAINDER,
        metavar="-- AGENT_CMD... | module:factory",
        help="a stdio agent's command line after --, or a Python factory",
    )


def run_serve(args: argparse.Namespace) -> int:
    from .http import AcpApp, ServerOptions, serve

    host, _, port = args.http.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"--http wants HOST:PORT, not {args.http!r}")
    host = host.strip("[]")
    target = list(args.target)
    from ._transports.remote.server import LOCAL_HOSTS

    options = ServerOptions(
        path=args.path,
        token=args.token or None,
        allowed_hosts=(*LOCAL_HOSTS, *args.allowed_host),
        allowed_origins=tuple(args.allowed_origin),
        idle_timeout=args.idle_timeout,
    )
    if target and target[0] == "--":
        from ._transports.remote.bridge import bridge

        if len(target) < 2:
            raise SystemExit("serve: give the agent command after --")
        app = AcpApp(serve=bridge(target[1:]), options=options)
    elif len(target) == 1 and ":" in target[0]:
        app = AcpApp(_load_factory(target[0]), options=options)
    else:
        raise SystemExit("serve: give `-- AGENT_CMD...` or `module:factory`")
    if not args.allowed_host and host not in LOCAL_HOSTS:
        raise SystemExit(f"serve: listening on {host!r} needs --allowed-host NAME")
    serve(app, host=host, port=int(port), log_level="info")
    return 0


def _load_factory(spec: str) -> Any:
    module_name, _, name = spec.partition(":")
    module = importlib.import_module(module_name)
    factory = module
    for part in name.split("."):
        factory = getattr(factory, part)
    return factory
