"""Backpressure: 20,000 notifications to a handler that takes 3 s each.

The agent tries to send 20,000 typed session/update notifications as fast as
it can, pacing itself the documented way (``await cx.drain()`` after each
send); the client's handler takes 3 s per notification. Handlers run in the
client's dispatch loop, so a slow handler stops the reading, the socket fills,
the agent's output is held, and ``drain()`` makes the agent wait. Without
that chain, the 20,000 messages would pile up in memory on one side or the
other.

Measured over a few seconds, in one process over a socketpair: the resident
memory growth (peak RSS against the RSS once both ends are connected) and how
many notifications the agent got out by 1 s and by the end. Targets:
growth ≤ 10 MiB, and the sender paced: far fewer than 20,000 sent, and no
more sent after the first second than one read of the client's lets through.

Run: ``python benchmarks/backpressure.py [--backend trio] [--seconds 6.5]``;
prints one JSON object. ``test_backpressure.py`` runs it in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

import anyio

import acp_fast as acp
from acp_fast._core import IMPLEMENTATION
from acp_fast.schema import v1
from acp_fast.testing import socket_pair

NOTIFICATIONS = 20_000
HANDLER_SECONDS = 3.0
FLOOD = "_bench/flood"


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


async def measure(seconds: float) -> dict[str, Any]:
    sent = 0
    handled = 0
    finished = anyio.Event()

    agent = acp.Agent.builder().name("flooding-agent")

    @agent.on_receive_request(FLOOD)
    async def flood(message: acp.UntypedMessage, responder: acp.Responder[Any], cx: Any) -> None:
        async def produce() -> None:
            nonlocal sent
            for i in range(NOTIFICATIONS):
                cx.send_notification(
                    v1.SessionNotification(
                        session_id="sess_flood",
                        update=v1.SessionUpdateAgentMessageChunk(
                            content=v1.ContentBlockText(text=f"token {i} of a long answer ")
                        ),
                    )
                )
                sent += 1
                await cx.drain()
            finished.set()
            responder.respond({"sent": sent})

        cx.spawn(produce)

    client = acp.Client.builder().name("slow-client")

    @client.on_receive_notification(v1.SessionNotification)
    async def slow(notification: v1.SessionNotification, cx: Any) -> None:
        nonlocal handled
        handled += 1
        await anyio.sleep(HANDLER_SECONDS)

    agent_end, client_end = socket_pair()
    result: dict[str, Any] = {}
    async with anyio.create_task_group() as group:
        group.start_soon(agent.connect_to, agent_end)
        async with client.connect(client_end) as cx:
            baseline = _rss()
            peak = baseline
            started = time.perf_counter()
            cx.send_request(acp.UntypedMessage(FLOOD, {})).detach()
            timeline = []
            while (elapsed := time.perf_counter() - started) < seconds:
                await anyio.sleep(0.25)
                peak = max(peak, _rss())
                timeline.append((round(elapsed, 2), sent))
            sent_at_1s = next((count for t, count in timeline if t >= 1.0), sent)
            result = {
                "core": IMPLEMENTATION,
                "backend": "",
                "notifications": NOTIFICATIONS,
                "handler_seconds": HANDLER_SECONDS,
                "seconds": seconds,
                "sent_at_1s": sent_at_1s,
                "sent_at_end": sent,
                "handled": handled,
                "sender_finished": finished.is_set(),
                "rss_baseline_mib": round(baseline / 2**20, 1),
                "rss_growth_mib": round((peak - baseline) / 2**20, 2),
                # The process's lifetime peak, an upper bound (it includes start-up).
                "max_rss_growth_mib": round((max(peak, _peak_rss()) - baseline) / 2**20, 2),
                "timeline": timeline,
            }
        group.cancel_scope.cancel()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--seconds", type=float, default=6.5)
    args = parser.parse_args(argv)
    result = anyio.run(measure, args.seconds, backend=args.backend)
    result["backend"] = args.backend
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
