"""How long the trace viewer takes to open a large trace.

Writes a synthetic trace of N messages (default 100,000) shaped like real
traffic, prompt turns of one request, a stream of ``session/update``
notifications and the answer, with a cancelled request now and then, across
a client, a conductor and an agent, exports it with ``acp-fast trace view
--html`` and loads the page in headless chromium. Reported: the export time,
the page's own time from navigation start to the first drawn diagram
(``data-load-ms``, set by the viewer once it has built its model and drawn
the rows in view), and chromium's whole run (start, load, render, exit).
Target: the page is drawn in under 3 s.

Run: ``python benchmarks/viewer_load.py [--messages 100000]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgspec

from acp_fast._async.trace import build_event
from acp_fast._viewer import export_html, make_server

UPDATES_PER_TURN = 20


def synthetic_trace(path: Path, messages: int) -> int:
    encode = msgspec.json.Encoder().encode
    written = 0
    ts = 0.0
    request_id = 1000
    with path.open("wb") as file:
        turn = 0
        while written < messages:
            turn += 1
            request_id += 1
            hops = (("client", "Client", "Conductor"), ("agent", "Conductor", "Agent"))
            lines: list[tuple[str, str, str, str, bytes]] = []
            for hop, a, b in hops:
                lines.append(
                    (
                        "out",
                        hop,
                        a,
                        b,
                        b'{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s%d","prompt":[{"type":"text","text":"turn %d"}]}}'
                        % (request_id, turn % 3, turn),
                    )
                )
            for n in range(UPDATES_PER_TURN):
                for hop, a, b in reversed(hops):
                    lines.append(
                        (
                            "in",
                            hop,
                            b,
                            a,
                            b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"token %d "}}}}'
                            % (turn % 3, n),
                        )
                    )
            cancelled = turn % 10 == 0
            if cancelled:
                for hop, a, b in hops:
                    lines.append(
                        (
                            "out",
                            hop,
                            a,
                            b,
                            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}'
                            % request_id,
                        )
                    )
            for hop, a, b in reversed(hops):
                if cancelled:
                    body = b'"error":{"code":-32800,"message":"Request cancelled"}'
                else:
                    body = b'"result":{"stopReason":"end_turn"}'
                lines.append(
                    ("in", hop, b, a, b'{"jsonrpc":"2.0","id":%d,%s}' % (request_id, body))
                )
            for direction, hop, sender, receiver, data in lines:
                ts += 0.0001
                event = build_event(ts, 1.8e9 + ts, direction, hop, sender, receiver, data)
                file.write(encode(event) + b"\n")
                written += 1
                if written >= messages:
                    break
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("needs Debian's chromium")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "big.jsons"
        count = synthetic_trace(trace, args.messages)
        started = time.perf_counter()
        page = Path(tmp) / "big.html"
        export_html(trace, page)
        exported = time.perf_counter() - started
        argv = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={tmp}/profile",
            "--window-size=1400,1000", "--dump-dom", page.as_uri(),
        ]  # fmt: skip
        started = time.perf_counter()
        dom = subprocess.run(argv, capture_output=True, check=True, timeout=120).stdout.decode()
        browser = time.perf_counter() - started
        match = re.search(r'data-load-ms="(\d+)"', dom)
        # The same trace served (acp-fast trace view): the page fetches /events.
        server = make_server(trace)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        # The page is drawn after its fetch of /events: wait for it.
        argv[-1:] = ["--virtual-time-budget=20000", f"http://127.0.0.1:{server.server_address[1]}/"]
        started = time.perf_counter()
        served = subprocess.run(argv, capture_output=True, check=True, timeout=120).stdout.decode()
        served_browser = time.perf_counter() - started
        server.shutdown()
        server.server_close()
        served_match = re.search(r'data-load-ms="(\d+)"', served)
        print(
            json.dumps(
                {
                    "messages": count,
                    "trace_bytes": trace.stat().st_size,
                    "page_bytes": page.stat().st_size,
                    "export_s": round(exported, 3),
                    "page_drawn_ms": int(match.group(1)) if match else None,
                    "chromium_run_s": round(browser, 3),
                    "served_page_drawn_ms": int(served_match.group(1)) if served_match else None,
                    "served_chromium_run_s": round(served_browser, 3),
                }
            )
        )


if __name__ == "__main__":
    main()
