"""``acp-fast serve``: an agent over Streamable HTTP and WebSocket (docs/remote.md).

``acp-fast serve --http 127.0.0.1:8000 -- my-agent --stdio``  bridge a stdio agent
``acp-fast serve --http 127.0.0.1:8000 package.module:Factory``  serve a Python agent
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from typing import Any

__all__ = ("add_arguments", "host_port", "run_serve")


def add_arguments(serve: argparse.ArgumentParser) -> None:
    """The options of ``acp-fast serve``."""
    serve.add_argument(
        "--http",
        default=("127.0.0.1", 8000),
        type=host_port,
        metavar="HOST:PORT",
        help="the address to listen on (default: 127.0.0.1:8000; [::1]:PORT for IPv6)",
    )
    serve.add_argument(
        "--path",
        default="/acp",
        type=url_path,
        help="the URL path of the endpoint, starting with / (default: /acp)",
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
        type=positive_seconds,
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


def host_port(text: str) -> tuple[str, int]:
    """``--http HOST:PORT`` (``[::1]:PORT`` for IPv6), checked as it is parsed."""
    host, _, port = text.rpartition(":")
    bracketed = host.startswith("[") or host.endswith("]")
    if bracketed and not (host.startswith("[") and host.endswith("]") and len(host) > 2):
        host = ""  # "[::1" or "::1]": an IPv6 address is written [ADDRESS]:PORT
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"wants HOST:PORT with a port 0-65535, not {text!r}")
    return host, int(port)


def url_path(text: str) -> str:
    """``--path``: an absolute URL path."""
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"wants a path starting with /, not {text!r}")
    return text


def positive_seconds(text: str) -> float:
    """``--idle-timeout``: a positive number of seconds (``inf``: never)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:  # also NaN
        raise argparse.ArgumentTypeError(f"wants a positive number of seconds, not {text!r}")
    return value


class _Failed(Exception):
    """What ``run_serve`` reports in one line, exit status 2."""


def run_serve(args: argparse.Namespace) -> int:
    from ._cli import UsageError
    from ._transports.remote.server import LOCAL_HOSTS

    host, port = args.http
    target = list(args.target)
    if target[:1] == ["--"]:
        if len(target) < 2:
            raise UsageError("give the agent command after --")
    elif len(target) != 1 or ":" not in target[0]:
        raise UsageError("give `-- AGENT_CMD...` or `module:factory`")
    if not args.allowed_host and host not in LOCAL_HOSTS:
        raise UsageError(f"listening on {host!r} needs --allowed-host NAME")
    from .http import AcpApp, ServerOptions, serve

    options = ServerOptions(
        path=args.path,
        token=args.token or None,
        allowed_hosts=(*LOCAL_HOSTS, *args.allowed_host),
        allowed_origins=tuple(args.allowed_origin),
        idle_timeout=args.idle_timeout,
    )
    if target[0] == "--":
        import shutil

        from ._transports.remote.bridge import bridge

        if shutil.which(target[1]) is None:
            # Started per connection: a missing command would fail each one.
            print(
                f"acp-fast serve: cannot start the agent: no such command: {target[1]!r}",
                file=sys.stderr,
            )
            return 2
        app = AcpApp(serve=bridge(target[1:]), options=options)
    else:
        try:
            app = AcpApp(_load_factory(target[0]), options=options)
        except _Failed as exc:
            print(f"acp-fast serve: {exc}", file=sys.stderr)
            return 2
    problem = _cannot_listen(host, port)
    if problem is not None:
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        print(f"acp-fast serve: cannot listen on {shown}: {problem}", file=sys.stderr)
        return 2
    serve(app, host=host, port=port, log_level="info")
    return 0


def _cannot_listen(host: str, port: int) -> str | None:
    """Why uvicorn could not bind ``host:port`` (an address in use, one this
    machine does not have), tried before it starts: its own report is a log
    line and status 3. None when the address is free."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        # SO_REUSEADDR, as uvicorn binds: a port in TIME_WAIT is free.
        with socket.create_server((host, port), family=family):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _load_factory(spec: str) -> Any:
    """The object ``module:name`` names (``name`` may be dotted); it must be callable."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise _Failed(f"{spec!r} is not module:factory")
    # As uvicorn does (its --app-dir, "." by default): a module of the
    # working directory imports, though the acp-fast script's own directory
    # is first on sys.path, not the working directory.
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)
    try:
        factory: Any = importlib.import_module(module_name)
    except Exception as exc:  # its own import error, a syntax error, ...
        raise _Failed(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for part in name.split("."):
        try:
            factory = getattr(factory, part)
        except AttributeError:
            raise _Failed(f"{spec!r}: {module_name!r} has no attribute {name!r}") from None
    if not callable(factory):
        raise _Failed(
            f"{spec!r} is a {type(factory).__name__}, not a factory "
            "(a BaseAgent class, or a function returning an agent or a builder)"
        )
    return factory
