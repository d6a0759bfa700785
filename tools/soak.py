"""Soak test: a million requests with random cancel, detach, drop and timeout.

Two acp_fast connections in one process send each other requests at once
(both ends are client and server). Each request picks how its sender treats
it and how its receiver answers:

* sender: await it; cancel it then await it; give up on it by a timeout;
  detach it (sometimes cancelling it through a handle first); drop the
  handle unconsumed (its garbage collection cancels it); hand it to a
  result callback; or prepare it and publish it, or drop it unpublished;
* receiver: answer at once; answer later from a spawned task; run the work
  under ``run_until_cancelled`` (-32800 when cancelled in time); drop the
  responder (-32603 "dropped its responder"); raise (-32603); answer an
  error.

Every outcome a sender sees is checked against what the receiver was asked
to do. At the end, after every answer has arrived: both request tables and
both cancellation registries are empty, no task is left, no request saw more
than one ``$/cancel_request``, and RSS stayed flat after warm-up.

Run::

    python tools/soak.py                        # 1,000,000 requests on asyncio
    python tools/soak.py --backend trio --requests 200000
    python tools/soak.py --transport socket     # through a real socketpair

Exit status 0 when every check holds; the report goes to stdout. A short
version runs in the test suite (tests/reliability/test_soak.py).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import acp_fast as acp  # noqa: E402
from acp_fast.testing import memory_pair, socket_pair  # noqa: E402

METHOD = "soak"
ERROR_CODE = 4242
SENDER_MODES = ("await", "cancel", "timeout", "detach", "drop", "callback", "prepared")
SENDER_WEIGHTS = (30, 15, 10, 10, 10, 15, 10)
RECEIVER_MODES = ("now", "later", "cancellable", "drop", "raise", "error")
RECEIVER_WEIGHTS = (35, 20, 20, 8, 7, 10)


def rss_bytes() -> int:
    """Resident set size now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


@dataclass
class Side:
    """What one end of the pair sent and saw."""

    name: str
    cx: Any = None
    first_id: int | None = None
    cancels_seen: bytearray = field(default_factory=bytearray)  # per peer request index
    peer_first_id: int | None = None
    duplicate_cancels: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)
    callbacks_pending: int = 0


@dataclass
class Report:
    backend: str
    transport: str
    requests: int
    concurrency: int
    seconds: float = 0.0
    rss_mib: list[tuple[int, float]] = field(default_factory=list)
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    tasks_before: int = 0
    tasks_after: int = 0
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def rss_growth_mib(self) -> float:
        """RSS at the end minus RSS after warm-up (the first 10%)."""
        if len(self.rss_mib) < 2:
            return 0.0
        return self.rss_mib[-1][1] - self.rss_mib[1][1]

    def text(self) -> str:
        lines = [
            f"soak: {self.requests:,} requests ({self.concurrency} in flight per direction) "
            f"on {self.backend} over {self.transport}: {self.seconds:.1f} s, "
            f"{self.requests_per_second:,.0f} requests/s",
            "RSS (MiB) by requests done: "
            + ", ".join(f"{done:,}: {mib:.1f}" for done, mib in self.rss_mib),
            f"RSS growth after warm-up: {self.rss_growth_mib:+.1f} MiB",
            f"tasks: {self.tasks_before} before, {self.tasks_after} after",
        ]
        for name, table in self.tables.items():
            lines.append(f"{name}: " + ", ".join(f"{k} {v}" for k, v in table.items()))
        for name, counts in self.outcomes.items():
            lines.append(
                f"{name} outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            )
        lines.append(
            "FAILED:\n  " + "\n  ".join(self.failures) if self.failures else "all checks passed"
        )
        return "\n".join(lines)


def expected_outcomes(receiver: str, n: int) -> set[Any]:
    """What an awaiting sender may see for a request the receiver treats so."""
    if receiver in ("now", "later"):
        return {n}
    if receiver == "cancellable":
        return {n, -32800}
    if receiver == "drop":
        return {"dropped"}
    if receiver == "raise":
        return {"raised"}
    return {ERROR_CODE}


def outcome_of(value: Any) -> Any:
    if not isinstance(value, acp.Error):
        return value
    if (
        value.code == -32603
        and isinstance(value.data, str)
        and "dropped its responder" in value.data
    ):
        return "dropped"
    if (
        value.code == -32603
        and isinstance(value.data, dict)
        and value.data.get("details") == "ValueError: soak"
    ):
        return "raised"
    return value.code


def build(side: Side) -> acp.Builder[Any]:
    async def handle(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        params = message.params
        n, mode, steps = params["n"], params["mode"], params["steps"]
        if mode == "now":
            responder.respond(n)
        elif mode == "later":

            async def later() -> None:
                for _ in range(steps):
                    await anyio.lowlevel.checkpoint()
                responder.respond(n)

            cx.spawn(later)
        elif mode == "cancellable":

            async def work() -> int:
                for _ in range(steps):
                    await anyio.lowlevel.checkpoint()
                return int(n)

            async def cancellable() -> None:
                try:
                    responder.respond(await responder.cancellation().run_until_cancelled(work))
                except acp.Error as error:
                    responder.respond_with_error(error)

            cx.spawn(cancellable)
        elif mode == "drop":
            del responder  # answered -32603 when collected (now: refcounting)
        elif mode == "raise":
            raise ValueError("soak")
        else:
            responder.respond_with_error(acp.Error(ERROR_CODE, "soak error"))

    async def cancel_seen(message: acp.UntypedMessage, cx: Any) -> None:
        request_id = message.params["requestId"]
        if side.peer_first_id is None or type(request_id) is not int:
            return
        index = request_id - side.peer_first_id
        if 0 <= index < len(side.cancels_seen):
            if side.cancels_seen[index]:
                side.duplicate_cancels += 1
            side.cancels_seen[index] = 1

    return (
        acp.UntypedRole.builder()
        .name(side.name)
        .on_receive_request(handle, METHOD)
        .on_receive_notification(cancel_seen, "$/cancel_request")
    )


async def _sender(
    side: Side,
    peer: Side,
    worker: int,
    requests: int,
    concurrency: int,
    seed: int,
    progress: list[int],
) -> None:
    rng = random.Random(seed * 1000 + worker)
    cx = side.cx
    for n in range(worker, requests, concurrency):
        sender = rng.choices(SENDER_MODES, SENDER_WEIGHTS)[0]
        receiver = rng.choices(RECEIVER_MODES, RECEIVER_WEIGHTS)[0]
        message = acp.UntypedMessage(METHOD, {"n": n, "mode": receiver, "steps": rng.randrange(4)})
        expected = expected_outcomes(receiver, n)
        progress[0] += 1
        if sender == "prepared":
            prepared = cx.prepare_request(message)
            if rng.random() < 0.5:
                del prepared  # never published: nothing is sent, nothing pending
                side.outcomes["prepared-dropped"] += 1
                continue
            sent = prepared.block_task()
        else:
            sent = cx.send_request(message)
        if side.first_id is None:
            side.first_id = sent.id
            peer.peer_first_id = sent.id
        if sender in ("await", "prepared"):
            _check(side, sender, outcome_of(await _result(sent)), expected)
        elif sender == "cancel":
            for _ in range(rng.randrange(3)):
                await anyio.lowlevel.checkpoint()
            sent.cancel()
            _check(side, sender, outcome_of(await _result(sent)), expected | {-32800})
        elif sender == "timeout":
            with anyio.move_on_after(rng.choice((0, 0, 1e-5, 1e-4))):
                value = await _result(sent)
                _check(side, sender, outcome_of(value), expected)
                continue
            side.outcomes["timeout-gave-up"] += 1
        elif sender == "detach":
            handle = sent.cancellation_handle()
            sent.detach()
            if rng.random() < 0.3:
                handle.cancel()
            side.outcomes["detach"] += 1
        elif sender == "drop":
            del sent  # cancels it (once) as it is collected
            side.outcomes["drop"] += 1
        else:
            side.callbacks_pending += 1

            def callback(value: Any, expected: set[Any] = expected) -> None:
                side.callbacks_pending -= 1
                _check(side, "callback", outcome_of(value), expected)

            sent.on_receiving_result(callback)


async def _result(sent: acp.SentRequest[Any]) -> Any:
    try:
        return await sent
    except acp.Error as error:
        return error


LABELS = {-32800: "cancelled", "dropped": "dropped", "raised": "raised", ERROR_CODE: "error"}


def _check(side: Side, sender: str, outcome: Any, expected: set[Any]) -> None:
    if outcome in expected:
        side.outcomes[f"{sender}:{LABELS.get(outcome, 'result')}"] += 1
    elif len(side.wrong) < 20:
        side.wrong.append(
            f"{side.name} {sender}: got {outcome!r}, expected one of {sorted(map(repr, expected))}"
        )


async def soak(
    requests: int = 1_000_000,
    *,
    concurrency: int = 64,
    seed: int = 8,
    transport: str = "memory",
    samples: int = 10,
    echo: Any = None,
) -> Report:
    """Run the soak in the current event loop; return the report."""
    backend = _backend_name()
    report = Report(
        backend=backend, transport=transport, requests=requests, concurrency=concurrency
    )
    a, b = Side("A"), Side("B")
    for side in (a, b):
        side.cancels_seen = bytearray(requests)  # one byte per request: 1 MB for a million
    gc.collect()
    report.tasks_before = len(anyio.get_running_tasks())
    left, right = memory_pair() if transport == "memory" else socket_pair()
    per_side = requests // 2
    progress = [0]
    logger = logging.getLogger("acp_fast")
    disabled = logger.disabled
    logger.disabled = True  # "raise" and "drop" log on purpose, a million times
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", acp.AbandonedRequestWarning)
            async with build(a).connect(left) as a.cx, build(b).connect(right) as b.cx:
                started = time.perf_counter()
                step = max(1, requests // samples)

                async def sample() -> None:
                    next_at = 0
                    while True:
                        if progress[0] >= next_at:
                            gc.collect()
                            report.rss_mib.append((progress[0], rss_bytes() / 2**20))
                            if echo is not None:
                                echo(
                                    f"  {progress[0]:>9,} requests, RSS {report.rss_mib[-1][1]:.1f} MiB"
                                )
                            next_at += step
                        if progress[0] >= requests:
                            return
                        await anyio.sleep(0.05)

                async with anyio.create_task_group() as group:
                    group.start_soon(sample)
                    for worker in range(concurrency):
                        group.start_soon(
                            _sender, a, b, worker, per_side, concurrency, seed, progress
                        )
                        group.start_soon(
                            _sender,
                            b,
                            a,
                            worker,
                            requests - per_side,
                            concurrency,
                            seed + 1,
                            progress,
                        )
                # Everything is sent; wait (bounded) for every answer and callback.
                with anyio.move_on_after(30):
                    while not _settled(a, b):  # noqa: ASYNC110 - state of two connections
                        await anyio.sleep(0.01)
                report.seconds = time.perf_counter() - started
                gc.collect()
                report.rss_mib.append((progress[0], rss_bytes() / 2**20))
                for side in (a, b):
                    table = side.cx._table
                    report.tables[f"{side.name} tables"] = {
                        "outgoing (ID table)": table.outgoing_count,
                        "incoming (cancel registry)": table.incoming_count,
                        "callbacks pending": side.callbacks_pending,
                    }
        report.tasks_after = len(anyio.get_running_tasks())
    finally:
        logger.disabled = disabled
    for side in (a, b):
        report.outcomes[side.name] = dict(side.outcomes)
        report.failures += side.wrong
        if side.duplicate_cancels:
            report.failures.append(
                f"{side.name} saw {side.duplicate_cancels} duplicate $/cancel_request"
            )
    for name, table in report.tables.items():
        for key, value in table.items():
            if value:
                report.failures.append(f"{name}: {key} is {value} at the end")
    if report.tasks_after != report.tasks_before:
        report.failures.append(f"tasks: {report.tasks_before} before, {report.tasks_after} after")
    return report


def _settled(*sides: Side) -> bool:
    return all(
        s.cx._table.outgoing_count == 0
        and s.cx._table.incoming_count == 0
        and s.callbacks_pending == 0
        for s in sides
    )


def _backend_name() -> str:
    try:
        import sniffio

        return sniffio.current_async_library()
    except Exception:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument(
        "--concurrency", type=int, default=64, help="requests in flight per direction"
    )
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--transport", choices=("memory", "socket"), default="memory")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument(
        "--max-rss-growth", type=float, default=16.0, help="MiB allowed after warm-up"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)

    def run() -> Any:
        return soak(
            args.requests,
            concurrency=args.concurrency,
            seed=args.seed,
            transport=args.transport,
            echo=None if args.json else print,
        )

    report = anyio.run(run, backend=args.backend)
    if report.rss_growth_mib > args.max_rss_growth:
        report.failures.append(
            f"RSS grew {report.rss_growth_mib:.1f} MiB after warm-up (limit {args.max_rss_growth})"
        )
    if args.json:
        print(
            json.dumps(
                {
                    **report.__dict__,
                    "requests_per_second": report.requests_per_second,
                    "rss_growth_mib": report.rss_growth_mib,
                }
            )
        )
    else:
        print(report.text())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
