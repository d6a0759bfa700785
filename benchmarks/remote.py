"""Remote transports on loopback: throughput beside stdio, and a load test.

    python benchmarks/remote.py rates [--n 5000] [--notes 20000]
    python benchmarks/remote.py rates --kinds stdio,ws --app floor
    python benchmarks/remote.py rates --pin 0 --rounds 3
    python benchmarks/remote.py load [--ws 1000] [--http 200] [--chunks 10]

``rates``: the same agent over a stdio subprocess, over a WebSocket and over
Streamable HTTP (uvicorn in a subprocess, one worker): round trips with 1 and
64 requests in flight, and notifications per second (over HTTP they travel
on a session's SSE stream). Printed with each remote rate's ratio to stdio's,
all from the same run. ``--rounds R`` repeats the transports in turn and
reports medians; ``--pin CPU`` puts this process and every child (the stdio
agent, uvicorn) on one CPU, so the figures are CPU cost rather than how the
scheduler happened to spread two processes over two CPUs.

``load``: one uvicorn worker holds ``--ws`` WebSocket and ``--http``
Streamable-HTTP connections at once; each runs initialize -> session/new ->
a prompt streaming ``--chunks`` updates, then waits until every connection
got there before closing. Reports connections held, round trips per second,
p50/p99 latency of each request, the server's RSS per connection, and that
no update was lost. Loopback only; bounded in count and time (``--timeout``).

Output is JSON on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx

import acp_fast as acp
from acp_fast import helpers as h
from acp_fast.schema import v1

SCRIPT = str(Path(__file__).resolve())
WS_IMPL = "websockets-sansio"  # acp_fast.http.serve's default


# -- the agent ------------------------------------------------------------------


def rates_agent() -> acp.Builder[Any]:
    """Echo, and a flood of notifications scoped to a session."""
    builder = acp.Agent.builder().name("bench-agent")

    @builder.on_receive_request("initialize")
    async def initialize(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond({"protocolVersion": 1})

    @builder.on_receive_request("_b/echo")
    async def echo(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond(message.params)

    @builder.on_receive_request("_b/flood")
    async def flood(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        session, count = message.params["sessionId"], message.params["n"]

        async def run() -> None:
            for i in range(count):
                cx.send_notification(acp.UntypedMessage("_b/note", {"sessionId": session, "i": i}))
                if i % 256 == 255:
                    await anyio.lowlevel.checkpoint()  # let the writer catch up
            responder.respond({"n": count})

        cx.spawn(run)

    return builder


class LoadAgent(acp.BaseAgent):
    """initialize, session/new, and a prompt streaming ``N`` chunks."""

    async def initialize(self, request: v1.InitializeRequest) -> v1.InitializeResponse:
        return v1.InitializeResponse(protocol_version=1)

    async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id="s")

    async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
        block = request.prompt[0]
        count = int(block.text) if isinstance(block, v1.ContentBlockText) else 0
        for n in range(count):
            await self.client.session_update(request.session_id, h.agent_text(f"{n} "))
        return v1.PromptResponse(stop_reason="end_turn")


async def floor_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The thinnest ASGI app answering the ``rates`` workload over a WebSocket.

    No SDK: each text message is decoded, and answered (``_b/flood`` with
    its notifications first). What uvicorn alone costs per message.
    """
    import msgspec

    if scope["type"] == "http":  # the health check
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
        return
    if scope["type"] != "websocket":
        return
    await receive()
    await send({"type": "websocket.accept"})
    decode, encode = msgspec.json.decode, msgspec.json.encode
    while True:
        event = await receive()
        if event["type"] != "websocket.receive":
            return
        request = decode(event["text"])
        result = request.get("params")
        if request.get("method") == "_b/flood":
            session = result["sessionId"]
            for i in range(result["n"]):
                note = {
                    "jsonrpc": "2.0",
                    "method": "_b/note",
                    "params": {"sessionId": session, "i": i},
                }
                await send({"type": "websocket.send", "text": encode(note).decode()})
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        await send({"type": "websocket.send", "text": encode(answer).decode()})


def serve_main(kind: str, port: int, ws: str) -> None:
    import uvicorn

    from acp_fast.http import AcpApp

    if kind == "floor":
        app: Any = floor_app
    else:
        app = AcpApp(rates_agent) if kind == "rates" else AcpApp(LoadAgent, idle_timeout=600)
    uvicorn.run(app, host="127.0.0.1", port=port, ws=ws, log_level="warning", backlog=4096)


# -- helpers ----------------------------------------------------------------------


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(kind: str, ws: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, SCRIPT, "serve", kind, str(port), "--ws", ws])
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/health").text == "ok":
                return process, base
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def transport(kind: str, base: str) -> acp.Transport:
    if kind == "stdio":
        return acp.Subprocess([sys.executable, SCRIPT, "stdio"])
    if kind == "ws":
        return acp.WebSocketTransport(base.replace("http://", "ws://") + "/acp")
    return acp.HttpTransport(base + "/acp", timeout=60)


# -- rates ------------------------------------------------------------------------


async def measure_rates(kind: str, base: str, n: int, notes: int) -> dict[str, float]:
    received = 0
    all_in = anyio.Event()
    builder = acp.Client.builder()

    @builder.on_receive_notification("_b/note")
    async def note(message: acp.UntypedMessage, cx: Any) -> None:
        nonlocal received
        received += 1
        if received == notes:
            all_in.set()

    results: dict[str, float] = {}

    async def main(cx: acp.ConnectionTo[Any]) -> None:
        await cx.send_request(acp.UntypedMessage("initialize", {"protocolVersion": 1}))
        # Warm up; over HTTP this also opens the session's stream.
        await cx.send_request(acp.UntypedMessage("_b/flood", {"sessionId": "s", "n": 10}))
        for i in range(200):
            await cx.send_request(acp.UntypedMessage("_b/echo", {"i": i}))
        start = time.perf_counter()
        for i in range(n):
            await cx.send_request(acp.UntypedMessage("_b/echo", {"i": i}))
        results["rt_c1"] = n / (time.perf_counter() - start)

        async def worker(count: int) -> None:
            for i in range(count):
                await cx.send_request(acp.UntypedMessage("_b/echo", {"i": i}))

        start = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(64):
                group.start_soon(worker, n * 4 // 64)
        results["rt_c64"] = (n * 4 // 64 * 64) / (time.perf_counter() - start)

        nonlocal received
        received = 0
        start = time.perf_counter()
        await cx.send_request(acp.UntypedMessage("_b/flood", {"sessionId": "s", "n": notes}))
        await all_in.wait()
        results["notify"] = notes / (time.perf_counter() - start)

    with anyio.fail_after(300):
        await builder.connect_with(transport(kind, base), main)
    return results


def rates(args: argparse.Namespace) -> dict[str, Any]:
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})  # inherited by every child
    server, base = start_server(args.app, args.ws_impl)
    runs: dict[str, list[dict[str, float]]] = {}
    try:
        for round_ in range(args.rounds):
            for kind in args.kinds.split(","):
                log(f"rates over {kind} (round {round_ + 1} of {args.rounds})...")
                runs.setdefault(kind, []).append(
                    anyio.run(measure_rates, kind, base, args.n, args.notes)
                )
    finally:
        server.terminate()
        server.wait(10)
    table = {
        kind: {row: statistics.median(run[row] for run in kind_runs) for row in kind_runs[0]}
        for kind, kind_runs in runs.items()
    }
    ratios = {
        kind: {row: round(table[kind][row] / table["stdio"][row], 3) for row in table["stdio"]}
        for kind in table
        if kind != "stdio" and "stdio" in table
    }
    rounded = {
        kind: {row: round(rate) for row, rate in rows.items()} for kind, rows in table.items()
    }
    return {
        "rates_per_s": rounded,
        "ratio_to_stdio": ratios,
        "rounds": args.rounds,
        "pinned_to_cpu": args.pin,
    }


# -- load -------------------------------------------------------------------------


class CountingClient(acp.BaseClient):
    def __init__(self) -> None:
        self.chunks = 0

    async def session_update(self, notification: v1.SessionNotification) -> None:
        self.chunks += 1


async def load_run(args: argparse.Namespace, base: str, server_pid: int) -> dict[str, Any]:
    total = args.ws + args.http
    latencies: list[float] = []
    counts: list[int] = []
    failures: list[str] = []
    held = 0
    peak_held = 0
    ready = anyio.Event()
    arrived = 0
    limiter = anyio.CapacityLimiter(args.opening)  # connections being opened at once

    async def timed(call: Callable[[], Awaitable[Any]]) -> Any:
        start = time.perf_counter()
        result = await call()
        latencies.append(time.perf_counter() - start)
        return result

    async def one(kind: str) -> None:
        nonlocal held, peak_held, arrived
        client = CountingClient()
        try:
            async with limiter:
                connection = acp.connect_to_agent(client, transport(kind, base))
                agent = await connection.__aenter__()
            try:
                held += 1
                peak_held = max(peak_held, held)
                await timed(agent.initialize)
                session = await timed(lambda: agent.new_session(cwd="/"))
                result = await timed(lambda: agent.prompt(session.session_id, str(args.chunks)))
                assert result.stop_reason == "end_turn"
                counts.append(client.chunks)
                arrived += 1
                if arrived == total:
                    ready.set()
                await ready.wait()  # every connection is held at once
            finally:
                held -= 1
                await connection.__aexit__(None, None, None)
        except Exception as exc:  # counted, and reported
            failures.append(f"{kind}: {exc!r}")
            arrived += 1
            if arrived == total:
                ready.set()

    baseline = rss_kib(server_pid)
    start = time.perf_counter()
    rss_at_peak = baseline
    with anyio.fail_after(args.timeout):
        async with anyio.create_task_group() as group:
            for i in range(total):
                group.start_soon(one, "ws" if i < args.ws else "http")

            async def sample() -> None:
                nonlocal rss_at_peak
                while not ready.is_set():
                    rss_at_peak = max(rss_at_peak, rss_kib(server_pid))
                    await anyio.sleep(0.2)
                rss_at_peak = max(rss_at_peak, rss_kib(server_pid))

            group.start_soon(sample)
    elapsed = time.perf_counter() - start
    latencies.sort()

    def percentile(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2)

    return {
        "connections": {"ws": args.ws, "http": args.http},
        "connections_held_at_once": peak_held,
        "failures": len(failures),
        "first_failures": failures[:3],
        "updates_lost": sum(args.chunks - c for c in counts),
        "round_trips": len(latencies),
        "round_trips_per_s": round(len(latencies) / elapsed),
        "latency_ms": {"p50": percentile(0.5), "p99": percentile(0.99)},
        "elapsed_s": round(elapsed, 2),
        "server_rss_mib": {
            "before": round(baseline / 1024, 1),
            "peak": round(rss_at_peak / 1024, 1),
        },
        "server_rss_kib_per_connection": round((rss_at_peak - baseline) / max(1, peak_held), 1),
    }


def load(args: argparse.Namespace) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server, base = start_server("load", args.ws_impl)
    try:
        return anyio.run(load_run, args, base, server.pid)
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser("rates")
    r.add_argument("--n", type=int, default=5000)
    r.add_argument("--notes", type=int, default=20000)
    r.add_argument("--kinds", default="stdio,ws,http", help="which transports, in order")
    r.add_argument("--rounds", type=int, default=1, help="rounds of every transport; medians")
    r.add_argument("--pin", type=int, metavar="CPU", help="run everything on this one CPU")
    r.add_argument(
        "--app",
        choices=("rates", "floor"),
        default="rates",
        help="the served app: AcpApp, or the thinnest ASGI app (WebSocket only: --kinds stdio,ws)",
    )
    ld = commands.add_parser("load")
    ld.add_argument("--ws", type=int, default=1000)
    ld.add_argument("--http", type=int, default=200)
    ld.add_argument("--chunks", type=int, default=10)
    ld.add_argument("--opening", type=int, default=100)
    ld.add_argument("--timeout", type=float, default=240)
    s = commands.add_parser("serve")
    s.add_argument("kind")
    s.add_argument("port", type=int)
    s.add_argument("--ws", default=WS_IMPL)
    commands.add_parser("stdio")
    for command in (r, ld):
        command.add_argument(
            "--ws-impl", default=WS_IMPL, help="uvicorn's WebSocket implementation (its --ws)"
        )
    args = parser.parse_args()
    if args.command == "serve":
        serve_main(args.kind, args.port, args.ws)
    elif args.command == "stdio":
        anyio.run(rates_agent().connect_to, acp.stdio())
    else:
        result = rates(args) if args.command == "rates" else load(args)
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
