"""The trace viewer (docs/tracing.md) in a real browser: Debian's chromium,
headless, on a trace of the demo recorded through a conductor with the
example proxy; and its server, run as ``acp-fast trace view``."""

from __future__ import annotations

import contextlib
import html.parser
import json
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_fast._viewer import export_html, make_server, page
from acp_fast.examples.demo import demo

from .helpers import PROCESS_TIMEOUT, command, read_trace

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BROWSER_TIMEOUT = 40.0


def chromium(tmp_path: Path, url: str, *extra: str) -> str:
    """Run headless chromium on ``url``; its stdout (the DOM with --dump-dom).

    Without chromium the test fails, as the interop tests do without node: a
    real browser draws the page or nothing is tested (.ci/run installs it).
    """
    assert CHROMIUM is not None, "Debian's chromium is not installed (apt-get install chromium)"
    profile = tmp_path / "profile"
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
        "--window-size=1400,2400", "--virtual-time-budget=5000", *extra, url,
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=BROWSER_TIMEOUT, check=True)
    return done.stdout.decode("utf-8", "replace")


class Elements(html.parser.HTMLParser):
    """Every element of a dumped DOM: (tag, attributes, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text: list[str] = []
        self.elements.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in ("meta", "input", "br", "link"):
            self._open.append(text)

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for text in self._open:
            text.append(data)

    def having(self, cls: str) -> list[tuple[dict[str, str], str]]:
        return [
            (attrs, "".join(text))
            for _, attrs, text in self.elements
            if cls in attrs.get("class", "").split()
        ]


@pytest.fixture(scope="module")
def demo_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo (a normal turn, session/cancel, $/cancel_request) recorded by
    a conductor in front of the example proxy and the example agent."""
    path = tmp_path_factory.mktemp("demo") / "demo.jsons"
    python = sys.executable
    conductor = [
        python, "-m", "acp_fast", "conductor", "--trace", str(path),
        "--proxy", command(python, "-m", "acp_fast", "example-proxy"),
        "--agent", command(python, "-m", "acp_fast", "example-agent"),
    ]  # fmt: skip

    async def run() -> None:
        with anyio.fail_after(PROCESS_TIMEOUT):
            await demo(conductor)

    anyio.run(run)
    return path


def test_the_viewer_draws_lanes_pairs_and_cancel_links(demo_trace: Path, tmp_path: Path):
    events, _ = read_trace(demo_trace)
    out = tmp_path / "demo.html"
    assert export_html(demo_trace, out) == len(events) + 1
    dom = Elements()
    dom.feed(chromium(tmp_path, out.as_uri(), "--dump-dom"))

    body = next(attrs for tag, attrs, _ in dom.elements if tag == "body")
    assert body.get("data-ready") == "true"
    assert [text for _, text in dom.having("lane")] == ["Client", "Conductor", "Proxy(0)", "Agent"]

    rows = {attrs["data-index"]: (attrs, text) for attrs, text in dom.having("row")
            if "data-index" in attrs}  # fmt: skip
    # Every request of the demo is joined to its answer, both ways, with a latency.
    requests = [i for i, e in enumerate(events) if e["type"] == "request"]
    assert requests
    for i in requests:
        attrs, text = rows[str(i)]
        answer = attrs["data-pair"]
        assert events[int(answer)]["type"] == "response"
        assert events[int(answer)]["id"] == events[i]["id"]
        assert rows[answer][0]["data-pair"] == str(i)
        assert float(attrs["data-latency"]) >= 0 and " ms" in text

    links = {attrs["data-target"]: text for attrs, text in dom.having("cancel-link")}
    cancelled = {events[int(target)]["method"] for target in links}
    assert cancelled == {"session/prompt", "_example/slow"}
    # $/cancel_request on every hop (client, into and out of the proxy, agent)
    # points at that hop's own request.
    slow = [i for i in requests if events[i]["method"] == "_example/slow"]
    assert len(slow) == 4
    for i in slow:
        assert str(i) in links
        attrs, text = rows[str(i)]
        assert "cancelled" in attrs["class"].split() and "cancelled" in text
        answer_attrs, answer_text = rows[attrs["data-pair"]]
        assert "-32800" in answer_text and "error" in answer_attrs["class"].split()
    # The turn stopped by session/cancel is marked too.
    session_cancels = [attrs for attrs, text in dom.having("row") if "session/cancel" in text]
    assert len(session_cancels) == 4 and all(
        "cancel" in a["class"].split() for a in session_cancels
    )

    groups = dom.having("group")
    assert groups, "session/update streams are collapsed"
    assert all(text.count("session/update \u00d7") == 1 for _, text in groups)
    # Collapsed: the updates of a group have no rows of their own.
    counted = sum(int(attrs["data-count"]) for attrs, _ in groups)
    updates = sum(1 for e in events if e.get("method") == "session/update")
    shown = sum(1 for i in rows if events[int(i)].get("method") == "session/update")
    assert counted + shown == updates and counted > shown

    screenshot = tmp_path / "viewer.png"
    chromium(tmp_path, out.as_uri(), f"--screenshot={screenshot}")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 10_000


def test_a_message_link_expands_its_stream_and_shows_its_json(demo_trace: Path, tmp_path: Path):
    events, _ = read_trace(demo_trace)
    out = tmp_path / "demo.html"
    export_html(demo_trace, out)
    update = next(i for i, e in enumerate(events) if e.get("method") == "session/update")
    dom = Elements()
    dom.feed(chromium(tmp_path, out.as_uri() + f"#event={update}", "--dump-dom"))
    detail = next(attrs for tag, attrs, _ in dom.elements if attrs.get("id") == "detail")
    assert "hidden" not in detail
    shown = next(text for tag, attrs, text in dom.elements if attrs.get("id") == "detail-json")
    assert json.loads("".join(shown)) == events[update]["raw"]
    selected = dom.having("selected")
    assert [attrs["data-index"] for attrs, _ in selected] == [str(update)]
    opened = [text for _, text in dom.having("group") if "\u25be" in text]
    assert len(opened) == 1, "its session/update stream is expanded"


def test_the_page_needs_no_network(demo_trace: Path):
    text = page("[]")
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert "<script src" not in text and "<link" not in text


def test_events_that_contain_a_script_end_tag_stay_inside_the_page(tmp_path: Path):
    trace = tmp_path / "t.jsons"
    trace.write_text(json.dumps({"type": "notification", "method": "</script><b>"}) + "\n")
    out = tmp_path / "t.html"
    export_html(trace, out)
    text = out.read_text()
    assert "</script><b>" not in text
    assert text.count("</script>") == 2


@contextlib.contextmanager
def live_server(trace: Path) -> Iterator[str]:
    """``trace view --live``'s server on ``trace``, in a thread; its base URL."""
    server = make_server(trace, live=True)
    assert server.server_address[0] == "127.0.0.1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def test_the_server_serves_the_page_and_rereads_the_file(tmp_path: Path):
    trace = tmp_path / "live.jsons"
    trace.write_text('{"type":"notification","ts":0.1,"method":"a"}\n{"type":"notif')
    with live_server(trace) as base:
        page_text = get(base + "/").decode()
        assert "const LIVE = true;" in page_text
        assert json.loads(get(base + "/events")) == [
            {"type": "notification", "ts": 0.1, "method": "a"}
        ]
        with trace.open("a") as file:
            file.write('ication","ts":0.2,"method":"b"}\n')
        assert [e["method"] for e in json.loads(get(base + "/events"))] == ["a", "b"]
        with pytest.raises(urllib.error.HTTPError):
            get(base + "/other")


def test_acp_fast_trace_view_serves_on_localhost(demo_trace: Path):
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_fast", "trace", "view", str(demo_trace), "--no-open"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split()[3]
        assert url.startswith("http://127.0.0.1:")
        events = json.loads(get(url + "events"))
        assert events == [json.loads(x) for x in demo_trace.read_text().splitlines()]
        assert f"<title>{demo_trace.name}</title>".encode() in get(url)
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


# A message whose text would end the page's <script> element, one whose
# "<!--<script>" would keep the element from ending, and the characters the
# embedding escapes besides (docs/tracing.md, "The viewer").
HOSTILE = "</script><script>window.pwned=1</script>"
HOSTILE_TOO = "<!--<script>document.body.dataset.pwned=1</script>"
ODD = "a & b &amp; \u2028 \u2029"


def hostile_trace(path: Path) -> int:
    """A three-message trace around the hostile one; its index."""
    raw = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s-1",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": HOSTILE},
            },
            "_meta": {"more": HOSTILE_TOO, "odd": ODD},
        },
    }
    hostile = {
        "type": "notification", "ts": 0.2, "dir": "in", "hop": "h", "from": "Agent",
        "to": "Client", "method": "session/update", "session": "s-1",
        "params": raw["params"], "raw": raw,
    }  # fmt: skip
    around = [
        {"type": "notification", "ts": t, "dir": "out", "hop": "h", "from": "Client",
         "to": "Agent", "method": m, "raw": {"jsonrpc": "2.0", "method": m}}
        for t, m in ((0.1, "_t/before"), (0.3, "_t/after"))
    ]  # fmt: skip
    events = [around[0], hostile, around[1]]
    # ensure_ascii=False: the characters themselves, as a recorder writes them.
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), "utf-8")
    return 1


def assert_shows_the_hostile_message(dom: Elements, index: int) -> None:
    body = next(attrs for tag, attrs, _ in dom.elements if tag == "body")
    assert body.get("data-ready") == "true"
    assert "data-pwned" not in body
    shown = next(text for tag, attrs, text in dom.elements if attrs.get("id") == "detail-json")
    raw = json.loads("".join(shown))
    assert raw["params"]["update"]["content"]["text"] == HOSTILE
    assert raw["params"]["_meta"] == {"more": HOSTILE_TOO, "odd": ODD}
    rows = [attrs["data-index"] for attrs, _ in dom.having("row") if "data-index" in attrs]
    assert rows == ["0", str(index), "2"]
    assert not [tag for tag, _, _ in dom.elements if tag == "b"]


def test_a_message_with_markup_renders_intact_in_the_exported_page(tmp_path: Path):
    trace = tmp_path / "hostile.jsons"
    index = hostile_trace(trace)
    out = tmp_path / "hostile.html"
    assert export_html(trace, out) == 3
    text = out.read_text("utf-8")
    data = text.split('<script id="trace-data" type="application/json">', 1)[1]
    data = data.split("</script>", 1)[0]
    for char in "<>&\u2028\u2029":
        assert char not in data
    assert json.loads(data)[index]["raw"]["params"]["update"]["content"]["text"] == HOSTILE
    dom = Elements()
    dom.feed(chromium(tmp_path, out.as_uri() + f"#event={index}", "--dump-dom"))
    assert_shows_the_hostile_message(dom, index)


def test_a_message_with_markup_renders_intact_in_the_live_page(tmp_path: Path):
    trace = tmp_path / "hostile.jsons"
    index = hostile_trace(trace)
    with live_server(trace) as base:
        url = base + f"/#event={index}"
        dom = Elements()
        dom.feed(chromium(tmp_path, url, "--dump-dom"))
        assert_shows_the_hostile_message(dom, index)


def damaged_trace(path: Path) -> list[dict[str, Any]]:
    """Two events among lines that are not JSON objects; the events."""
    events = [
        {"type": "notification", "ts": t, "dir": "out", "hop": "h", "from": "Client",
         "to": "Agent", "method": m, "raw": {"jsonrpc": "2.0", "method": m}}
        for t, m in ((0.1, "_t/first"), (0.2, "_t/second"))
    ]  # fmt: skip
    lines = [
        json.dumps(events[0]),
        "garbage, not JSON",  # line 2: the first skipped
        "[1, 2, 3]",
        "",
        '{"type": "notification", oops}',
        json.dumps(events[1]),
        # The last line of a recorder killed mid-write: cut, ending in "}".
        '{"type":"notification","ts":0.3,"params":{"a":{"b":1}',
    ]
    path.write_text("\n".join(lines), "utf-8")
    return events


WARNING = "skipped 4 lines of {} that are not JSON objects (the first: line 2)"


def test_lines_that_are_not_json_objects_are_skipped_with_one_warning(tmp_path: Path):
    trace = tmp_path / "damaged.jsons"
    events = damaged_trace(trace)
    out = tmp_path / "damaged.html"
    done = subprocess.run(
        [sys.executable, "-m", "acp_fast", "trace", "view", str(trace), "--html", str(out)],
        capture_output=True, text=True, timeout=PROCESS_TIMEOUT, check=True,
    )  # fmt: skip
    assert done.stdout == f"wrote {out} (2 events)\n"
    assert done.stderr.splitlines() == ["acp-fast trace view: " + WARNING.format(trace)]
    dom = Elements()
    dom.feed(chromium(tmp_path, out.as_uri() + "#event=1", "--dump-dom"))
    body = next(attrs for tag, attrs, _ in dom.elements if tag == "body")
    assert body.get("data-ready") == "true"
    rows = {attrs["data-index"]: text for attrs, text in dom.having("row") if "data-index" in attrs}
    assert list(rows) == ["0", "1"]
    assert "_t/first" in rows["0"] and "_t/second" in rows["1"]
    shown = next(text for tag, attrs, text in dom.elements if attrs.get("id") == "detail-json")
    assert json.loads("".join(shown)) == events[1]["raw"]


def test_the_server_skips_them_too_and_warns_once(tmp_path: Path):
    trace = tmp_path / "damaged.jsons"
    events = damaged_trace(trace)
    process = subprocess.Popen(
        [sys.executable, "-m", "acp_fast", "trace", "view", str(trace), "--no-open"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[3]
        for _ in range(3):  # reread each time, warned about once
            assert json.loads(get(url + "events")) == events
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert stderr.splitlines() == ["acp-fast trace view: " + WARNING.format(trace)]


def test_a_live_trace_does_not_count_the_line_being_written(tmp_path: Path, capfd: Any):
    trace = tmp_path / "live.jsons"
    trace.write_text('{"type":"notification","ts":0.1,"method":"a"}\n{"type":"notif')
    with live_server(trace) as base:
        assert [e["method"] for e in json.loads(get(base + "/events"))] == ["a"]
        assert capfd.readouterr().err == ""
        with trace.open("a") as file:
            file.write("ication, cut}\n[]\n")
        assert [e["method"] for e in json.loads(get(base + "/events"))] == ["a"]
        assert json.loads(get(base + "/events")) == json.loads(get(base + "/events"))
    err = capfd.readouterr().err
    assert err.splitlines() == [
        f"acp-fast trace view: skipped 2 lines of {trace} that are not JSON objects"
        " (the first: line 2)"
    ]
