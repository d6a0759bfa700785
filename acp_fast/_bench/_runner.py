"""``acp-fast bench``: acp_fast (both cores) beside the official Python SDK.

Every configuration (SDK, core, backend) runs in child processes of its own,
so no configuration inherits another's imports, garbage or warm caches; the
pure core is selected with ``ACP_FAST_NO_EXTENSIONS=1`` in the child's
environment. The rounds interleave the configurations (round 1 runs each once,
then round 2, ...) so that a slow period of this machine hits all of them
alike, and each figure is the median of its rounds. Ratios are only ever taken
between figures of the same run.

The workloads (the same loops for both SDKs, see ``_common``):

* round trips in one process over a socketpair (the NDJSON byte path, as on
  stdio), with 1 and with 64 requests in flight;
* ``session/update`` agent_message_chunk notifications in one process, typed
  on both ends, counted when the client's handler has them;
* round trips over a stdio subprocess with 64 in flight;
* a typed decode and an encode of an agent_message_chunk, and ``import`` time;
* start-up: spawn an agent, send ``initialize``, read the answer (``_startup``;
  the median of 10 spawns).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ("DESCRIPTION", "add_arguments", "main", "run")

# (key, label, unit): rates are per second (higher is better); "s" rows are
# seconds per operation (lower is better).
ROWS: tuple[tuple[str, str, str], ...] = (
    ("rt:socket:1", "round trip, in-process socketpair, C=1", "/s"),
    ("rt:socket:64", "round trip, in-process socketpair, C=64", "/s"),
    ("notify:socket:0", "session/update notifications, in-process", "/s"),
    ("rt:stdio:64", "round trip, stdio subprocess, C=64", "/s"),
    ("decode", "typed decode, agent_message_chunk", "s"),
    ("encode", "encode, agent_message_chunk notification", "s"),
    ("import", "import time", "s"),
    ("startup", "start-up, spawn to initialize answered", "s"),
)
WORKLOADS = ("rt:socket:1", "rt:socket:64", "notify:socket:0", "rt:stdio:64", "codec")


@dataclass
class Config:
    label: str
    sdk: str  # "fast" or "official"
    core: str  # "c", "py" or "-"
    backend: str
    runs: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("ACP_FAST_NO_EXTENSIONS", None)
        if self.core == "py":
            env["ACP_FAST_NO_EXTENSIONS"] = "1"
        return env

    def median(self, key: str) -> float | None:
        values = self.runs.get(key)
        return statistics.median(values) if values else None


# Set for the workers by --trace-dir; read by _fast.connected.
TRACE_DIR_VARIABLE = "ACP_FAST_BENCH_TRACE_DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``acp-fast bench``."""
    parser.add_argument("--quick", action="store_true", help="one short round (about 20 s)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument(
        "--backend",
        action="append",
        choices=("asyncio", "trio"),
        help="backend for acp_fast; repeat for both (default: asyncio). "
        "The official SDK runs on asyncio, its only backend.",
    )
    parser.add_argument("--rounds", type=int, help="rounds per configuration (default 5)")
    parser.add_argument("--seconds", type=float, help="measuring window per workload")
    parser.add_argument("--no-official", action="store_true", help="leave the official SDK out")
    parser.add_argument(
        "--trace-dir",
        metavar="DIR",
        help="record acp_fast's client connections to trace files in DIR "
        "(to measure what tracing costs; docs/tracing.md)",
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="the class API over stdio instead: BaseAgent and BaseClient beside the "
        "official SDK's agent class and spawn_agent_process, against raw no-SDK peers",
    )
    parser.add_argument(
        "--pin", action="store_true", help="with --stdio: run every process on one CPU"
    )


DESCRIPTION = (
    "Throughput of acp_fast (compiled and pure core) beside the official Python SDK, "
    "measured in one run. Install the latter with pip install 'acp-fast[bench]'."
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acp-fast bench", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    backends = list(dict.fromkeys(args.backend or ["asyncio"]))
    if args.trace_dir:
        # The workers inherit the environment (Config.env).
        os.environ[TRACE_DIR_VARIABLE] = os.path.abspath(args.trace_dir)
    if args.stdio:
        from ._stdio import run_stdio

        for backend in backends:
            sys.stdout.write(
                run_stdio(
                    rounds=args.rounds or (1 if args.quick else 3),
                    seconds=args.seconds or (0.5 if args.quick else 1.0),
                    backend=backend,
                    pin=args.pin,
                    official=not args.no_official and _official_version() is not None,
                    as_json=args.json,
                )
            )
        return 0
    # Five short rounds beat three long ones on a noisy machine: a slow spell
    # then spoils one round of each configuration, and the median drops it.
    rounds = args.rounds or (1 if args.quick else 5)
    seconds = args.seconds or (0.3 if args.quick else 0.5)
    warmup = 0.1 if args.quick else 0.2
    # A pure install (or ACP_FAST_NO_EXTENSIONS in our own environment) has
    # no compiled core to compare: then only the pure one runs.
    compiled = importlib.util.find_spec("acp_fast._core._framing_c") is not None
    pure_only = os.environ.get("ACP_FAST_NO_EXTENSIONS", "") not in ("", "0")
    cores = ("c", "py") if compiled and not pure_only else ("py",)
    configs = [
        Config(f"acp_fast {core} {backend}", "fast", core, backend)
        for backend in backends
        for core in cores
    ]
    official = None if args.no_official else _official_version()
    if official is not None:
        configs.append(Config("official", "official", "-", "asyncio"))
    # The official SDK's benchmark code itself, on acp_fast.compat (asyncio,
    # as that code is written): what changing the imports alone buys.
    configs.append(Config("compat", "compat", cores[0], "asyncio"))

    progress = _Progress(sys.stderr, total=len(configs) * (rounds * len(WORKLOADS) + 2))
    started = time.perf_counter()
    for config in configs:
        progress.step(f"{config.label}: import time")
        config.runs["import"] = [_import_time(config)]
        progress.step(f"{config.label}: start-up, 10 spawns")
        config.runs["startup"] = [_startup_time(config, 3 if args.quick else 10)]
    for round_number in range(rounds):
        # Rotate the order each round, so no configuration always runs first.
        shift = round_number % len(configs)
        for config in configs[shift:] + configs[:shift]:
            _run_worker(config, warmup, seconds, progress, f"round {round_number + 1}/{rounds}")
    progress.done()
    elapsed = time.perf_counter() - started

    report = _report(configs, backends, rounds, seconds, official, elapsed)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_table(configs, report))
    return 0


# --- running -------------------------------------------------------------------


def _official_version() -> str | None:
    if importlib.util.find_spec("acp") is None:
        return None
    try:
        from importlib.metadata import version

        return version("agent-client-protocol")
    except Exception:
        return None


def _import_time(config: Config) -> float:
    """Median of 5 fresh interpreters timing the import itself.

    With bytecode caches written (one import first, and without
    PYTHONDONTWRITEBYTECODE), as for an installed package: otherwise a
    source tree whose caches are stale measures the compiler too.
    """
    module = {"official": "acp", "compat": "acp_fast.compat"}.get(config.sdk, "acp_fast")
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = config.env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for attempt in range(6):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if out.returncode == 0 and attempt:
            times.append(float(out.stdout))
    return statistics.median(times) if times else float("nan")


def _startup_time(config: Config, count: int) -> float:
    from ._startup import command_for, measure

    try:
        return measure(command_for(config.sdk, config.backend), config.env(), count)
    except (RuntimeError, OSError, subprocess.SubprocessError):
        return float("nan")


def _run_worker(
    config: Config, warmup: float, seconds: float, progress: _Progress, label: str
) -> None:
    command = [
        sys.executable,
        "-m",
        "acp_fast._bench._worker",
        "--sdk",
        config.sdk,
        "--backend",
        config.backend,
        "--warmup",
        str(warmup),
        "--seconds",
        str(seconds),
        "--workloads",
        ",".join(WORKLOADS),
    ]
    progress.step(f"{config.label}, {label}: {WORKLOADS[0]}")
    with subprocess.Popen(
        command, env=config.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        finished = 0
        for line in process.stdout:
            result = json.loads(line)
            finished += 1
            workload = result.pop("workload")
            if workload == "codec":
                for key in ("decode", "encode"):
                    config.runs.setdefault(key, []).append(result.pop(key))
            else:
                config.runs.setdefault(workload, []).append(result.pop("rate"))
            config.info.update(result)
            if finished < len(WORKLOADS):
                progress.step(f"{config.label}, {label}: {WORKLOADS[finished]}")
        errors = process.stderr.read()
    if process.returncode != 0 or finished < len(WORKLOADS):
        progress.note(f"{config.label}: worker failed ({process.returncode}): {errors[-2000:]}")
        progress.skip(len(WORKLOADS) - finished)


class _Progress:
    """``[ 7/31] what runs now`` on stderr: one line redrawn on a terminal."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.count = 0
        self.tty = stream.isatty()
        self.started = time.perf_counter()

    def step(self, what: str) -> None:
        self.count += 1
        text = f"[{self.count:>2}/{self.total}] {time.perf_counter() - self.started:5.1f}s {what}"
        if self.tty:
            self.stream.write("\r\033[K" + text[:120])
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def skip(self, count: int) -> None:
        self.count += count

    def note(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.flush()


# --- reporting -------------------------------------------------------------------


def _report(
    configs: list[Config],
    backends: list[str],
    rounds: int,
    seconds: float,
    official: str | None,
    elapsed: float,
) -> dict[str, Any]:
    from acp_fast import __version__

    results = {
        config.label: {
            "sdk": {"official": "official", "compat": "acp_fast.compat"}.get(
                config.sdk, "acp_fast"
            ),
            "core": config.info.get("core", config.core),
            "backend": config.backend,
            "results": {
                key: {"median": config.median(key), "runs": config.runs.get(key, [])}
                for key, _, _ in ROWS
            },
        }
        for config in configs
    }
    return {
        "acp_fast": __version__,
        "official": official,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "backends": backends,
        "rounds": rounds,
        "seconds": seconds,
        "elapsed": round(elapsed, 1),
        "units": {key: unit for key, _, unit in ROWS},
        "configs": results,
        "ratios": _ratios(configs),
    }


def _speedup(unit: str, value: float | None, base: float | None) -> float | None:
    """How many times better ``value`` is than ``base``."""
    if value is None or base is None or value != value or base != base or not value or not base:
        return None
    return value / base if unit == "/s" else base / value


def _ratio_pairs(configs: list[Config]) -> list[tuple[str, Config, Config]]:
    by_label = {config.label: config for config in configs}
    official = by_label.get("official")
    pairs = [
        (f"{config.label.removeprefix('acp_fast ')} / official", config, official)
        for config in configs
        if config.sdk in ("fast", "compat") and official is not None
    ]
    for core in ("c", "py"):
        asyncio_config = by_label.get(f"acp_fast {core} asyncio")
        trio_config = by_label.get(f"acp_fast {core} trio")
        if asyncio_config is not None and trio_config is not None:
            pairs.append((f"{core} trio / {core} asyncio", trio_config, asyncio_config))
    return pairs


def _ratios(configs: list[Config]) -> dict[str, dict[str, float | None]]:
    return {
        name: {key: _speedup(unit, a.median(key), b.median(key)) for key, _, unit in ROWS}
        for name, a, b in _ratio_pairs(configs)
    }


def _format(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "-"
    if unit == "/s":
        return f"{value / 1000:,.1f}k/s"
    if value >= 0.01:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.2f} µs"


def _table(configs: list[Config], report: dict[str, Any]) -> str:
    official = report["official"]
    lines = [
        f"acp-fast bench: acp_fast {report['acp_fast']}"
        + (f" beside agent-client-protocol {official}" if official else "")
        + f"; Python {report['python']}, {report['cpus']} CPUs",
        f"{report['rounds']} round(s) of {report['seconds']} s windows, median; "
        f"the whole run took {report['elapsed']} s",
        "",
    ]
    lines += _grid(
        [config.label for config in configs],
        [
            (label, [_format(config.median(key), unit) for config in configs])
            for key, label, unit in ROWS
        ],
    )
    pairs = _ratio_pairs(configs)
    if pairs:
        lines += ["", "How many times faster (ratios of medians of this run):"]
        lines += _grid(
            [name for name, _, _ in pairs],
            [
                (label, [_times(report["ratios"][name][key]) for name, _, _ in pairs])
                for key, label, _unit in ROWS
            ],
        )
    if not official:
        lines += ["", "(the official SDK is not installed: pip install 'acp-fast[bench]')"]
    return "\n".join(lines) + "\n"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _grid(headers: list[str], rows: list[tuple[str, list[str]]]) -> list[str]:
    first = max(len(label) for label, _ in rows) + 2
    widths = [
        max(len(header), *(len(cells[i]) for _, cells in rows)) + 3
        for i, header in enumerate(headers)
    ]
    out = ["".ljust(first) + "".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    for label, cells in rows:
        out.append(
            label.ljust(first) + "".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        )
    return out
