"""What recording a trace to a file costs (docs/tracing.md).

    python benchmarks/trace_cost.py [--rounds 4] [--seconds 1] [--backend trio]
    python benchmarks/trace_cost.py --python OTHER/.venv/bin/python   # two builds
    python benchmarks/trace_cost.py --instructions [--python OTHER/...]  # callgrind
    python benchmarks/trace_cost.py --encode [--pure]   # the encoding alone, callgrind

Runs the `acp-fast bench` workloads over a socketpair (the client and the
bench agent in one process, only the client traced) in fresh processes,
untraced and traced to a file, interleaved round by round. Each run reports
its operations, wall time and the CPU time of the whole process (the trace
writer thread included). The table gives, per workload, the best CPU time per
operation and the best rate of each variant, and traced/untraced ratios
within each build: of those bests, and the median over the rounds of each
round's own two runs. With ``--python``, that interpreter's acp_fast runs in the
same rounds as a second build (e.g. another checkout's virtualenv), so two
versions are compared in one run.

``--instructions`` counts instead of timing: each workload runs a fixed
number of operations under ``valgrind --tool=callgrind`` (every thread of
the process), twice with different counts so that start-up cancels out,
and the table gives instructions per operation, untraced and traced, and
their ratio. The count moves far less than a rate (the loop's waits still
fall differently from run to run); it does not see the cache or the
kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = (("rt", 1), ("rt", 64), ("notify", 0))

_CHILD = r"""
import json, os, sys, time
import anyio
from acp_fast._bench import _fast
from acp_fast._bench._common import ECHO, SESSION_ID, STREAM, STREAM_BURST
import acp_fast as acp

kind, concurrency, warmup, seconds, backend = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
# A counted run (--instructions): this many operations, not timed.
total = int(sys.argv[6]) if len(sys.argv) > 6 else 0

async def main():
    counter = _fast.Counter()
    async with _fast.connected("socket", backend, counter) as cx:
        done = 0
        stop = False
        async def caller():
            nonlocal done
            i = 0
            share = total // concurrency if total else -1
            while not stop and i != share:
                await cx.send_request(acp.UntypedMessage(ECHO, {"i": i}))
                done += 1
                i += 1
        async def streamer():
            while not stop and (not total or counter.received() < total):
                expected = counter.received() + STREAM_BURST
                await cx.send_request(acp.UntypedMessage(STREAM, {"sessionId": SESSION_ID, "n": STREAM_BURST}))
                while counter.received() < expected:
                    await anyio.sleep(0.0002)
        async with anyio.create_task_group() as group:
            if kind == "rt":
                for _ in range(concurrency):
                    group.start_soon(caller)
                count = lambda: done
            else:
                group.start_soon(streamer)
                count = counter.received
            if total:
                return
            await anyio.sleep(warmup)
            n0, w0, c0 = count(), time.perf_counter(), time.process_time()
            await anyio.sleep(seconds)
            n1, w1, c1 = count(), time.perf_counter(), time.process_time()
            stop = True
        # The writer's flush at close is part of what tracing costs.
    c2 = time.process_time()
    print(json.dumps({"ops": n1 - n0, "wall": w1 - w0, "cpu": c1 - c0, "close_cpu": c2 - c1}))

anyio.run(main, backend=backend)
"""


_ENCODE_CHILD = r"""
import sys, time
from acp_fast._async import trace
from acp_fast._async.observe import INCOMING, OUTGOING

per_entry, rounds = int(sys.argv[1]), int(sys.argv[2])
ends_in = trace._entry_ends(INCOMING, "client-agent", "Agent", "Client")
ends_out = trace._entry_ends(OUTGOING, "client-agent", "Client", "Agent")
items = []
now = time.perf_counter()
while len(items) < 256:  # alternate writes of requests and reads of answers
    ids = range(len(items) * per_entry, (len(items) + 1) * per_entry)
    requests = [b'{"jsonrpc":"2.0","id":%d,"method":"_bench/echo","params":{"i":%d}}' % (i, i) for i in ids]
    answers = [b'{"jsonrpc":"2.0","id":%d,"result":{"i":%d}}' % (i, i) for i in ids]
    items.append((now, ends_out, b"\n".join(requests) + b"\n", trace.WRITTEN, 0, 0))
    items.append((now, ends_in, answers, trace.READ, 0, 0))
for _ in range(rounds):
    trace._encode_batch(items, now, 0.0)
"""


def encode_table(args: argparse.Namespace, pythons: list[str]) -> None:
    """Instructions per message of the trace's encoding, a batch of 256
    entries of one or 32 messages each, under callgrind (no event loop)."""
    print(f"core {'py' if args.pure else 'default'}, callgrind, instructions per message encoded")
    env = dict(os.environ)
    if args.pure:
        env["ACP_FAST_NO_EXTENSIONS"] = "1"
    with tempfile.TemporaryDirectory() as cwd:
        out_file = os.path.join(cwd, "callgrind.out")
        for python in pythons:
            for per_entry in (1, 32):
                totals = []
                for rounds in (2, 12):
                    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"]
                    command += [python, "-c", _ENCODE_CHILD, str(per_entry), str(rounds)]
                    subprocess.run(command, env=env, check=True, capture_output=True, cwd=cwd)
                    totals.append(_callgrind_total(out_file))
                per_message = (totals[1] - totals[0]) / (10 * 256 * per_entry)
                print(f"{python[-40:]:<40} {per_entry:>2} per entry {per_message:8.0f}", flush=True)


def _callgrind_total(out_file: str) -> int:
    try:
        with open(out_file) as counts:
            for line in counts:
                if line.startswith(("summary:", "totals:")):
                    return int(line.split()[1])
    finally:
        os.unlink(out_file)
    raise RuntimeError("callgrind wrote no total")


# Operations per counted run (the second run does twice as many).
_COUNTS = {"rt:1": 1000, "rt:64": 6400, "notify": 20000}


def _instructions(
    python: str,
    traced: str | None,
    kind: str,
    concurrency: int,
    total: int,
    args: argparse.Namespace,
    cwd: str,
) -> int:
    """Instructions of one counted run, every thread of the process."""
    env = dict(os.environ)
    env.pop("ACP_FAST_BENCH_TRACE_DIR", None)
    if traced is not None:
        env["ACP_FAST_BENCH_TRACE_DIR"] = traced
    if args.pure:
        env["ACP_FAST_NO_EXTENSIONS"] = "1"
    out_file = os.path.join(cwd, "callgrind.out")
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
        python,
        "-c",
        _CHILD,
        kind,
        str(concurrency),
        "0",
        "0",
        args.backend,
        str(total),
    ]
    subprocess.run(command, env=env, check=True, capture_output=True, cwd=cwd)
    return _callgrind_total(out_file)


def instructions_table(args: argparse.Namespace, pythons: list[str]) -> None:
    print(f"backend {args.backend}, core {'py' if args.pure else 'default'}, callgrind")
    print(f"{'build':<40} {'workload':<8} {'Ir/op off':>10} {'Ir/op on':>10} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as directory, tempfile.TemporaryDirectory() as cwd:
        for python in pythons:
            for kind, concurrency in WORKLOADS:
                name = f"{kind}:{concurrency}" if kind == "rt" else kind
                small = _COUNTS[name]
                per_op = []
                for traced in (None, directory):
                    low, high = (
                        _instructions(python, traced, kind, concurrency, total, args, cwd)
                        for total in (small, 2 * small)
                    )
                    for entry in os.listdir(directory):
                        os.unlink(os.path.join(directory, entry))
                    per_op.append((high - low) / small)
                print(
                    f"{python[-40:]:<40} {name:<8} {per_op[0]:10.0f} {per_op[1]:10.0f} "
                    f"{per_op[1] / per_op[0]:6.3f}",
                    flush=True,
                )


def _run(
    python: str, traced: str | None, kind: str, concurrency: int, args: argparse.Namespace, cwd: str
) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("ACP_FAST_BENCH_TRACE_DIR", None)
    if traced is not None:
        env["ACP_FAST_BENCH_TRACE_DIR"] = traced
    if args.pure:
        env["ACP_FAST_NO_EXTENSIONS"] = "1"
    command = [
        python,
        "-c",
        _CHILD,
        kind,
        str(concurrency),
        str(args.warmup),
        str(args.seconds),
        args.backend,
    ]
    if args.cpu is not None:
        command = ["taskset", "-c", args.cpu, *command]
    # Run from elsewhere: "-c" puts the working directory first on sys.path,
    # and a checkout's own package would shadow the interpreter's.
    out = subprocess.run(
        command, env=env, check=True, capture_output=True, text=True, cwd=cwd
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=[], help="another build's interpreter")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    parser.add_argument("--pure", action="store_true", help="the pure-Python core")
    parser.add_argument("--cpu", help="taskset -c CPUS for every run (e.g. 0, or 0,1)")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with callgrind instead"
    )
    parser.add_argument(
        "--encode", action="store_true", help="instructions per message of the encoding alone"
    )
    args = parser.parse_args()
    pythons = [sys.executable, *args.python]
    if args.instructions:
        instructions_table(args, pythons)
        return 0
    if args.encode:
        encode_table(args, pythons)
        return 0
    best: dict[tuple[str, bool, str], dict[str, float]] = {}
    # Each round's traced/untraced ratios from its two adjacent runs: their
    # median is steadier than a ratio of bests when the machine drifts.
    paired: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as directory, tempfile.TemporaryDirectory() as cwd:
        for round_number in range(args.rounds):
            for kind, concurrency in WORKLOADS:
                name = f"{kind}:{concurrency}" if kind == "rt" else kind
                for python in pythons if round_number % 2 == 0 else pythons[::-1]:
                    this_round: dict[bool, tuple[float, float]] = {}
                    for traced in (False, True) if round_number % 2 == 0 else (True, False):
                        result = _run(
                            python, directory if traced else None, kind, concurrency, args, cwd
                        )
                        for entry in os.listdir(directory):
                            os.unlink(os.path.join(directory, entry))
                        cpu = (result["cpu"] + result["close_cpu"]) / result["ops"]
                        rate = result["ops"] / result["wall"]
                        key = (python, traced, name)
                        seen = best.setdefault(key, {"cpu": cpu, "rate": rate})
                        seen["cpu"] = min(seen["cpu"], cpu)
                        seen["rate"] = max(seen["rate"], rate)
                        this_round[traced] = (cpu, rate)
                    (cpu_on, rate_on), (cpu_off, rate_off) = this_round[True], this_round[False]
                    paired.setdefault((python, name), []).append(
                        (cpu_on / cpu_off, rate_off / rate_on)
                    )
            print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    print(f"backend {args.backend}, core {'py' if args.pure else 'default'}, best of {args.rounds}")
    print(
        f"{'build':<40} {'workload':<8} {'us/op off':>9} {'us/op on':>9} {'cpu x':>6} {'rate x':>6}"
        f" {'median of pairs: cpu x':>22} {'rate x':>6}"
    )
    for python in pythons:
        for kind, concurrency in WORKLOADS:
            name = f"{kind}:{concurrency}" if kind == "rt" else kind
            off, on = best[(python, False, name)], best[(python, True, name)]
            pairs = paired[(python, name)]
            print(
                f"{python[-40:]:<40} {name:<8} {off['cpu'] * 1e6:9.2f} {on['cpu'] * 1e6:9.2f} "
                f"{on['cpu'] / off['cpu']:6.2f} {off['rate'] / on['rate']:6.2f}"
                f" {statistics.median(c for c, _ in pairs):22.2f}"
                f" {statistics.median(r for _, r in pairs):6.2f}"
            )
    if len(pythons) > 1:
        print("untraced, CPU per op against the first build:")
        for python in pythons[1:]:
            for kind, concurrency in WORKLOADS:
                name = f"{kind}:{concurrency}" if kind == "rt" else kind
                ratio = best[(python, False, name)]["cpu"] / best[(pythons[0], False, name)]["cpu"]
                print(f"  {python[-40:]:<40} {name:<8} {ratio:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
