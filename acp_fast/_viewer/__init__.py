"""The trace viewer: one page of vanilla JS/CSS, served locally or exported.

``serve`` hosts the page on 127.0.0.1 (an automatic port unless one is
given) with ``GET /`` (the page) and ``GET /events`` (the trace as a JSON
array, read from the file on each request, so ``--live`` sees it grow: the
page then polls every 500 ms). ``export_html`` writes the page with the
events inside, one file that needs no server and no network.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any

from ._lines import Skipped, embed, read_lines, warn_skipped

__all__ = ("NoEvents", "export_html", "load_events", "page", "serve")


def _asset(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text("utf-8")


def load_events(path: str | Path) -> list[Any]:
    """The events of an NDJSON trace. Lines that are not JSON objects are
    skipped, with one warning on stderr (see ``read_lines``)."""
    lines, skipped = read_lines(path)
    warn_skipped(path, skipped)
    return [json.loads(line) for line in lines]


def _events_json(lines: list[str]) -> str:
    return "[" + ",".join(lines) + "]"


def page(events_json: str | None, *, live: bool = False, title: str = "acp trace") -> str:
    """The viewer page; with ``events_json`` the events are inside it."""
    data = "" if events_json is None else embed(events_json)
    return (
        _asset("viewer.html")
        .replace("/*STYLE*/", _asset("viewer.css"))
        .replace("/*SCRIPT*/", _asset("viewer.js"))
        .replace("__TITLE__", _escape(title))
        .replace("__LIVE__", "true" if live else "false")
        .replace("__EVENTS__", data)
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class NoEvents(Exception):
    """``export_html(..., empty=False)`` of a file without a single event."""


def export_html(trace: str | Path, out: str | Path, *, empty: bool = True) -> int:
    """Write a self-contained page of ``trace`` to ``out``; the event count.
    With ``empty`` false, a file without events (not a trace, or empty)
    raises ``NoEvents`` and nothing is written."""
    lines, skipped = read_lines(trace)
    warn_skipped(trace, skipped)
    if not lines and not empty:
        raise NoEvents(str(trace))
    events_json = _events_json(lines)
    Path(out).write_text(page(events_json, title=Path(trace).name), encoding="utf-8")
    return len(lines)


class _Handler(http.server.BaseHTTPRequestHandler):
    trace: Path
    live: bool
    warned: list[Skipped]  # the last warning given: one per change, not per request

    def do_GET(self) -> None:
        if self.path == "/":
            body = page(None, live=self.live, title=self.trace.name).encode()
            kind = "text/html; charset=utf-8"
        elif self.path == "/events":
            try:
                lines, skipped = read_lines(self.trace, growing=self.live)
            except FileNotFoundError:
                lines, skipped = [], Skipped()
            if skipped != self.warned[0]:
                self.warned[0] = skipped
                warn_skipped(self.trace, skipped)
            body = _events_json(lines).encode()
            kind = "application/json"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page was closed meanwhile

    def log_message(self, format: str, *args: Any) -> None:
        pass


def make_server(
    trace: str | Path, *, port: int = 0, live: bool = False
) -> http.server.ThreadingHTTPServer:
    """A server for ``trace`` on 127.0.0.1 (not started)."""
    handler = type(
        "Handler", (_Handler,), {"trace": Path(trace), "live": live, "warned": [Skipped()]}
    )
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(
    trace: str | Path, *, port: int = 0, live: bool = False, open_browser: bool = True
) -> int:
    """``acp-fast trace view``: serve until interrupted; the exit status."""
    try:
        server = make_server(trace, port=port, live=live)
    except OSError as exc:  # the port is taken
        reason = exc.strerror or str(exc)
        print(f"acp-fast trace view: cannot listen on 127.0.0.1:{port}: {reason}", file=sys.stderr)
        return 2
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"trace viewer on {url} (Ctrl-C to stop)", flush=True)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT, as the other commands exit on Ctrl-C
    finally:
        server.server_close()
    return 0
