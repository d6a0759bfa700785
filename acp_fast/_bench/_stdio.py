"""``acp-fast bench --stdio``: the class API over stdio, against raw peers.

Users write agents and clients as classes (``acp.BaseAgent``,
``acp.BaseClient``), in their own process, on stdio. This table measures
exactly that, side by side in one run:

* **agents**, each driven by the same raw client (this process: no SDK, a
  blocking loop, one reused read buffer, orjson): the raw floor agent,
  acp_fast's connection layer (builder handlers), acp_fast's ``BaseAgent``,
  the official SDK's agent class;
* **clients**, each in a child process of its own against the raw floor
  agent: acp_fast's ``BaseClient`` with ``spawn_agent``, the official
  ``spawn_agent_process``; the floor is the raw client against the raw agent.

Rows: round trips with 1 and 64 requests in flight, ``session/update``
notifications handled per second, and the time from sending a cancel to
reading its answer (``$/cancel_request`` for a running request,
``session/cancel`` for a running prompt; for clients, the raw agent's
``$/cancel_request`` for the permission request it just sent), the median
of many. ``--pin`` puts every process on one CPU. Ratios are against the
official SDK and as % of the floor, all from this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from ._peers import SESSION, RawPipe

__all__ = ("run_stdio",)

ROWS: tuple[tuple[str, str, str], ...] = (
    ("rt1", "round trips/s, C=1", "/s"),
    ("rt64", "round trips/s, C=64", "/s"),
    ("notify", "notifications/s", "/s"),
    ("cancel", "$/cancel_request -> answer", "s"),
    ("session_cancel", "session/cancel -> answer", "s"),
)
AGENTS = (
    ("raw floor", "raw"),
    ("acp_fast builder", "builder"),
    ("acp_fast BaseAgent", "class"),
    ("official agent class", "official"),
)
CLIENTS = (
    ("acp_fast BaseClient", "fast"),
    ("official spawn_agent_process", "official"),
)
CANCEL_SAMPLES = 200
BURST = 1000
IGNORED = float("inf")  # a cancel that was never answered


def _peer_command(agent: str, backend: str) -> list[str]:
    return [sys.executable, "-m", "acp_fast._bench._peers", agent, "--backend", backend]


# --- the raw client driving an agent --------------------------------------------


class Driver:
    """The raw client: requests by id, answers matched by id."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.pipe = RawPipe(process.stdout.fileno(), process.stdin.fileno())
        self.next_id = 0
        self.notifications = 0

    def request(self, method: str, params: Any) -> tuple[int, bytes]:
        self.next_id += 1
        line = orjson.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method})
        return self.next_id, line[:-1] + b',"params":' + orjson.dumps(params) + b"}\n"

    def notify(self, method: str, params: Any) -> bytes:
        return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params}) + b"\n"

    def answers(self, timeout: float | None = None) -> list[Any]:
        """The responses of the next read (notifications are counted)."""
        if timeout is not None:
            ready, _, _ = select.select([self.pipe.read_fd], [], [], timeout)
            if not ready:
                return []
        lines = self.pipe.read_lines()
        if not lines:
            raise EOFError("the agent's output ended")
        out = []
        for line in lines:
            message = orjson.loads(line)
            if "method" in message:
                self.notifications += 1
            else:
                out.append(message)
        return out

    def call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        request_id, line = self.request(method, params)
        self.pipe.write(line)
        return self.wait_for(request_id, timeout)

    def wait_for(self, request_id: int, timeout: float | None = None) -> Any:
        deadline = None if timeout is None else time.perf_counter() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            answers = self.answers(left)
            if not answers and deadline is not None and time.perf_counter() >= deadline:
                return None
            for answer in answers:
                if answer.get("id") == request_id:
                    return answer


def drive_round_trips(driver: Driver, concurrency: int, seconds: float) -> float:
    params = {"i": 1}
    write = driver.pipe.write
    for _ in range(concurrency):
        write(driver.request("_bench/echo", params)[1])
    done = 0
    start = time.perf_counter()
    end = start + seconds
    while True:
        answers = driver.answers()
        done += len(answers)
        now = time.perf_counter()
        if now >= end:
            break
        write(b"".join(driver.request("_bench/echo", params)[1] for _ in answers))
    in_flight = concurrency - len(answers)
    while in_flight > 0:  # settle what is still in flight
        in_flight -= len(driver.answers())
    return done / (now - start)


def drive_notifications(driver: Driver, seconds: float) -> float:
    params = {"sessionId": SESSION, "n": BURST}
    start = time.perf_counter()
    first = driver.notifications
    while time.perf_counter() - start < seconds:
        driver.call("_bench/stream", params)
    return (driver.notifications - first) / (time.perf_counter() - start)


def drive_cancel(driver: Driver, samples: int) -> float:
    times = []
    for _ in range(samples):
        slow_id, line = driver.request("_bench/slow", {})
        driver.pipe.write(line)
        driver.call("_bench/echo", {})  # the slow request is running now
        started = time.perf_counter()
        driver.pipe.write(driver.notify("$/cancel_request", {"requestId": slow_id}))
        if driver.wait_for(slow_id, timeout=1.0) is None:
            return IGNORED
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def drive_session_cancel(driver: Driver, samples: int) -> float:
    times = []
    for _ in range(samples):
        prompt = {"sessionId": SESSION, "prompt": [{"type": "text", "text": "wait"}]}
        prompt_id, line = driver.request("session/prompt", prompt)
        driver.pipe.write(line)
        driver.call("_bench/echo", {})  # the prompt is running now
        started = time.perf_counter()
        driver.pipe.write(driver.notify("session/cancel", {"sessionId": SESSION}))
        if driver.wait_for(prompt_id, timeout=1.0) is None:
            return IGNORED
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure_agent(agent: str, backend: str, seconds: float) -> dict[str, float]:
    process = subprocess.Popen(
        _peer_command(agent, backend),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the official SDK logs every cancel it cannot route
    )
    try:
        driver = Driver(process)
        driver.call("initialize", {"protocolVersion": 1})
        driver.call("session/new", {"cwd": "/", "mcpServers": []})
        drive_round_trips(driver, 64, 0.2)  # warm-up
        return {
            "rt1": drive_round_trips(driver, 1, seconds),
            "rt64": drive_round_trips(driver, 64, seconds),
            "notify": drive_notifications(driver, seconds),
            "cancel": drive_cancel(driver, CANCEL_SAMPLES),
            "session_cancel": drive_session_cancel(driver, CANCEL_SAMPLES),
        }
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


# --- the clients (each in a child process: python -m acp_fast._bench._stdio) ---


async def _client_fast(backend: str, seconds: float) -> dict[str, float]:
    import anyio

    import acp_fast as acp
    from acp_fast.schema import v1

    from ._common import measure_round_trips, measure_stream

    class BenchClient(acp.BaseClient):
        count = 0

        async def session_update(self, notification: v1.SessionNotification) -> None:
            self.count += 1

        async def request_permission(
            self, request: v1.RequestPermissionRequest
        ) -> v1.RequestPermissionResponse:
            await anyio.sleep_forever()  # the agent cancels it at once
            raise AssertionError("unreachable")

    client = BenchClient()
    async with acp.spawn_agent(client, _peer_command("raw", "asyncio")) as agent:
        await agent.initialize()

        async def echo(i: int) -> object:
            return await agent.send_request(acp.UntypedMessage("_bench/echo", {"i": i}))

        async def stream(n: int) -> object:
            request = acp.UntypedMessage("_bench/stream", {"sessionId": SESSION, "n": n})
            return await agent.send_request(request)

        async def ask() -> float:
            answer = await agent.send_request(acp.UntypedMessage("_bench/ask", {}))
            return float(answer["seconds"])

        return {
            "rt1": await measure_round_trips(echo, 1, 0.2, seconds),
            "rt64": await measure_round_trips(echo, 64, 0.2, seconds),
            "notify": await measure_stream(stream, lambda: client.count, 0.2, seconds),
            "cancel": await _ask_latency(ask),
        }


async def _client_official(seconds: float) -> dict[str, float]:
    import asyncio

    import acp as official

    from ._common import measure_round_trips, measure_stream

    class BenchClient:
        count = 0

        def on_connect(self, conn: Any) -> None:
            pass

        async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
            self.count += 1

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

    client: Any = BenchClient()
    command = _peer_command("raw", "asyncio")
    async with official.spawn_agent_process(client, command[0], *command[1:]) as (conn, _):
        await conn.initialize(protocol_version=1)

        async def echo(i: int) -> object:
            return await conn.ext_method("bench/echo", {"i": i})

        async def stream(n: int) -> object:
            return await conn.ext_method("bench/stream", {"sessionId": SESSION, "n": n})

        async def ask() -> float:
            answer = await conn.ext_method("bench/ask", {})
            return float(answer["seconds"])

        return {
            "rt1": await measure_round_trips(echo, 1, 0.2, seconds),
            "rt64": await measure_round_trips(echo, 64, 0.2, seconds),
            "notify": await measure_stream(stream, lambda: client.count, 0.2, seconds),
            "cancel": await _ask_latency(ask),
        }


async def _ask_latency(ask: Callable[[], Any]) -> float:
    import anyio

    times: list[float] = []
    for _ in range(CANCEL_SAMPLES):
        with anyio.move_on_after(1.0):
            times.append(await ask())
            continue
        return IGNORED
    return statistics.median(times)


def measure_client(client: str, backend: str, seconds: float) -> dict[str, float]:
    command = [sys.executable, "-m", "acp_fast._bench._stdio", "client", client]
    command += ["--backend", backend, "--seconds", str(seconds)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"client {client} failed: {out.stderr[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# --- the table -----------------------------------------------------------------


def run_stdio(
    rounds: int, seconds: float, backend: str, pin: bool, official: bool, as_json: bool
) -> str:
    if pin:
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})  # the children inherit it
    agents = [(label, key) for label, key in AGENTS if official or key != "official"]
    clients = [(label, key) for label, key in CLIENTS if official or key != "official"]
    runs: dict[str, list[dict[str, float]]] = {}
    for round_number in range(rounds):
        for label, key in agents:
            print(f"round {round_number + 1}/{rounds}: agent {label}", file=sys.stderr)
            runs.setdefault("agent:" + label, []).append(measure_agent(key, backend, seconds))
        for label, key in clients:
            print(f"round {round_number + 1}/{rounds}: client {label}", file=sys.stderr)
            runs.setdefault("client:" + label, []).append(measure_client(key, backend, seconds))
    medians = {
        name: {key: statistics.median(r[key] for r in results) for key in results[0]}
        for name, results in runs.items()
    }
    if as_json:
        return json.dumps({"pinned": pin, "backend": backend, "medians": medians}, indent=2)
    floor = medians["agent:raw floor"]
    lines = [
        f"stdio, class API beside the official SDK; backend {backend}"
        f"{', all processes on one CPU' if pin else ''}; median of {rounds} round(s)",
        "",
    ]
    header = ["", *(label for label, _, _ in ROWS)]
    table = [header]
    for kind, entries, reference in (
        ("agent", agents, "agent:official agent class"),
        ("client", clients, "client:official spawn_agent_process"),
    ):
        names = [f"{kind}:{label}" for label, _ in entries]
        if kind == "client":
            names = ["agent:raw floor", *names]
        for name in names:
            values = medians[name]
            cells = [f"{kind}: {name.split(':', 1)[1]}"]
            for key, _, unit in ROWS:
                value = values.get(key)
                cell = _format(value, unit)
                if value is not None and name != "agent:raw floor":
                    notes = []
                    base = medians.get(reference, {}).get(key)
                    if name != reference and base is not None:
                        notes.append(_ratio(value, base, unit))
                    notes.append(_percent(value, floor.get(key), unit))
                    shown = [note for note in notes if note]
                    if shown:
                        cell += " (" + ", ".join(shown) + ")"
                cells.append(cell)
            table.append(cells)
        table.append([""] * len(header))
    widths = [max(len(row[i]) for row in table) + 2 for i in range(len(header))]
    lines.extend(
        "".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in table
    )
    lines.append("(x: times the official SDK's figure, higher is better; %: of the raw floor's)")
    return "\n".join(lines) + "\n"


def _format(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if value == IGNORED:
        return "ignored"
    if unit == "/s":
        return f"{value / 1000:.1f}k"
    return f"{value * 1e3:.3f} ms"


def _ratio(value: float, base: float, unit: str) -> str:
    if value == IGNORED or base == IGNORED or not value or not base:
        return ""
    return f"{(value / base if unit == '/s' else base / value):.2f}x"


def _percent(value: float, floor: float | None, unit: str) -> str:
    if floor is None or value == IGNORED or floor == IGNORED or not value:
        return ""
    return f"{100 * (value / floor if unit == '/s' else floor / value):.0f}%"


def main(argv: Sequence[str] | None = None) -> int:
    """The client child: ``python -m acp_fast._bench._stdio client fast|official``."""
    parser = argparse.ArgumentParser(prog="python -m acp_fast._bench._stdio")
    parser.add_argument("role", choices=("client",))
    parser.add_argument("client", choices=("fast", "official"))
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    if args.client == "fast":
        import anyio

        result = anyio.run(_client_fast, args.backend, args.seconds, backend=args.backend)
    else:
        import asyncio

        result = asyncio.run(_client_official(args.seconds))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
