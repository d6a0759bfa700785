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
import threading
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any

from ._lines import embed

__all__ = ("export_html", "load_events", "page", "serve")


def _asset(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text("utf-8")


def load_events(path: str | Path) -> list[Any]:
    """The events of an NDJSON trace; lines that are not JSON (a line still
    being written, say) are skipped."""
    events: list[Any] = []
    with open(path, "rb") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def _event_lines(path: str | Path) -> list[str]:
    # Raw lines, joined later: no decoding and re-encoding of 100k events.
    # A line that is not a whole object (one still being written) is left out.
    parts: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            line = line.strip()
            if line.startswith("{") and line.endswith("}"):
                parts.append(line)
    return parts


def _events_json(path: str | Path) -> str:
    return "[" + ",".join(_event_lines(path)) + "]"


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


def export_html(trace: str | Path, out: str | Path) -> int:
    """Write a self-contained page of ``trace`` to ``out``; the event count."""
    lines = _event_lines(trace)
    events_json = "[" + ",".join(lines) + "]"
    Path(out).write_text(page(events_json, title=Path(trace).name), encoding="utf-8")
    return len(lines)


class _Handler(http.server.BaseHTTPRequestHandler):
    trace: Path
    live: bool

    def do_GET(self) -> None:
        if self.path == "/":
            body = page(None, live=self.live, title=self.trace.name).encode()
            kind = "text/html; charset=utf-8"
        elif self.path == "/events":
            try:
                body = _events_json(self.trace).encode()
            except FileNotFoundError:
                body = b"[]"
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
    handler = type("Handler", (_Handler,), {"trace": Path(trace), "live": live})
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(
    trace: str | Path, *, port: int = 0, live: bool = False, open_browser: bool = True
) -> int:
    """``acp-fast trace view``: serve until interrupted; the exit status."""
    server = make_server(trace, port=port, live=live)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"trace viewer on {url} (Ctrl-C to stop)", flush=True)
    if open_browser:
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
