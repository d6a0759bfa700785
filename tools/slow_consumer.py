"""Slow consumer: a client that floods requests and does not read its answers.

A class-API agent (``python -m acp_fast._bench._peers class``), alone or
behind the conductor, is sent N ``_bench/echo`` requests by a writer thread
while nobody reads the agent's stdout. Output backpressure
(docs/semantics.md §2.4) must stop the agent (and each conductor hop) from
reading once about 1 MiB of answers is unwritten, so the writer blocks on a
full pipe instead of the agent's memory growing. Once the writer has stalled
(or finished), the answers are read: every request must be answered exactly
once, and the peak RSS growth of each process is reported.

The reader waits for ids, never for a number of lines: answers leave in
writes of any size (docs/semantics.md §1.1), so a read may end anywhere,
even inside a line, and a warm-up answer that was still in the pipe must not
count for a request of the flood. An answer that has not come after
``--patience`` seconds without output is reported missing, by id. The
processes' stderr (the conductor's carries the agent's) is kept, and its last
lines are shown when an answer is missing, doubled or an error: what a
process logged (a dropped response, a traceback) says which side lost it.

Run::

    python tools/slow_consumer.py                       # 1,000,000 requests, 20 s unread
    python tools/slow_consumer.py --through-conductor --backend trio

Exit status 0 when every request was answered exactly once and growth stayed
within the limit (16 MiB). A short version runs in the test suite
(tests/reliability/test_slow_consumer.py).
"""

from __future__ import annotations

import argparse
import os
import select
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, TypeVar

import orjson

MIB = 1024 * 1024
LIMIT = 16 * MIB
# The end of the processes' stderr a failed report shows.
STDERR_TAIL = 4096

_Id = TypeVar("_Id")


def _kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(p) for p in children.read().split()]
    except OSError:
        return []


@dataclass
class Report:
    requests: int
    answered: int = 0
    duplicates: int = 0
    errors: int = 0
    stalled_after: int = 0  # requests written while nobody read
    missing: list[int] = field(default_factory=list)  # ids of requests never answered
    growth: dict[str, int] = field(default_factory=dict)  # process -> peak RSS growth
    stderr: str = ""  # the end of what the processes wrote to stderr

    @property
    def answers_ok(self) -> bool:
        return self.answered == self.requests and self.duplicates == 0 and self.errors == 0

    @property
    def ok(self) -> bool:
        return self.answers_ok and all(g <= LIMIT for g in self.growth.values())

    def text(self) -> str:
        growth = ", ".join(f"{name} +{g / MIB:.1f} MiB" for name, g in self.growth.items())
        missing = ""
        if self.missing:
            more = ", …" if len(self.missing) > 10 else ""
            missing = f" (no answer to {', '.join(map(str, self.missing[:10]))}{more})"
        text = (
            f"{self.requests} requests: {self.answered} answered{missing}, "
            f"{self.duplicates} twice, {self.errors} errors; "
            f"{self.stalled_after} written while unread; peak RSS growth: {growth}"
        )
        if self.stderr and not self.answers_ok:
            text += "\nstderr (last lines):\n" + self.stderr
        return text


def run(
    requests: int,
    unread: float,
    backend: str = "asyncio",
    through_conductor: bool = False,
    patience: float = 30.0,
    agent: list[str] | None = None,
) -> Report:
    """Flood `requests` echo requests, leave the answers unread, then read them.

    `patience`: seconds without output after which the answers still missing
    are reported. `agent` replaces the class-API agent's command line.
    """
    if agent is None:
        agent = [sys.executable, "-m", "acp_fast._bench._peers", "class", "--backend", backend]
    command = agent
    if through_conductor:
        agent_command = shlex.join(agent)
        command = [sys.executable, "-m", "acp_fast", "conductor", "--backend", backend]
        command += ["--agent", agent_command]
    # A file, not a pipe: a process that logs a lot never blocks on it.
    stderr = tempfile.TemporaryFile()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin.fileno(), process.stdout.fileno()
    report = Report(requests)
    try:
        _write_all(
            stdin,
            b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1}}\n',
        )
        answers = _Reader(stdout, patience)
        answers.expect(["init"], "initialize")
        _warm_up(stdin, answers)
        pids = {"agent" if not through_conductor else "conductor": process.pid}
        if through_conductor:
            for child in _children(process.pid):
                pids["agent"] = child
        base = {name: _kib(pid, "VmRSS") for name, pid in pids.items()}

        written = [0]

        def write() -> None:
            batch = 1000
            for start in range(0, requests, batch):
                chunk = b"".join(
                    b'{"jsonrpc":"2.0","id":%d,"method":"_bench/echo","params":{"i":%d}}\n' % (i, i)
                    for i in range(start, min(start + batch, requests))
                )
                _write_all(stdin, chunk)
                written[0] = min(start + batch, requests)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # Nobody reads for `unread` seconds (or until everything is written).
        deadline = time.monotonic() + unread
        while time.monotonic() < deadline and written[0] < requests:
            time.sleep(0.1)
        report.stalled_after = written[0]
        peak_unread = {name: _kib(pid, "VmRSS") for name, pid in pids.items()}
        report.missing = sorted(answers.wait_for(range(requests)))
        writer.join(patience)  # still blocked in a write only if answers are missing
        report.answered = requests - len(report.missing)
        report.duplicates = answers.duplicates
        report.errors = answers.errors
        for name, pid in pids.items():
            peak = max(_kib(pid, "VmHWM"), peak_unread[name])
            report.growth[name] = max(0, peak - base[name])
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        report.stderr = _tail(stderr)
        stderr.close()
    return report


def _tail(file: IO[bytes]) -> str:
    """The last STDERR_TAIL bytes of ``file``, from the start of a line."""
    size = file.seek(0, os.SEEK_END)
    file.seek(max(0, size - STDERR_TAIL))
    data = file.read()
    if size > STDERR_TAIL:
        data = data[data.find(b"\n") + 1 :]
    return data.decode("utf-8", "replace")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _warm_up(stdin: int, answers: _Reader) -> None:
    """1,000 round trips, so that the baseline RSS is the agent's steady state."""
    _write_all(
        stdin,
        b"".join(
            b'{"jsonrpc":"2.0","id":"w%d","method":"_bench/echo","params":{"i":%d}}\n' % (i, i)
            for i in range(1000)
        ),
    )
    answers.expect([f"w{i}" for i in range(1000)], "warm-up")


class _Reader:
    """Reads the answers; every answer's id lands in `ids`."""

    def __init__(self, fd: int, patience: float) -> None:
        self.fd = fd
        self.patience = patience
        self.buffer = bytearray(1 << 20)
        self.rest = b""
        self.ids: set[object] = set()
        self.duplicates = 0
        self.errors = 0

    def expect(self, ids: Iterable[object], what: str) -> None:
        missing = self.wait_for(ids)
        if missing:
            raise RuntimeError(
                f"no answer to {len(missing)} {what} request(s): {sorted(map(str, missing))}"
            )

    def wait_for(self, ids: Iterable[_Id]) -> set[_Id]:
        """Read until each of `ids` is answered; return those still unanswered.

        Reading stops early, with ids left over, when the output ends or
        nothing arrives for `patience` seconds.
        """
        missing = {id_ for id_ in ids if id_ not in self.ids}
        while missing:
            ready, _, _ = select.select([self.fd], [], [], self.patience)
            if not ready:
                break
            n = os.readv(self.fd, [self.buffer])
            if n == 0:
                break
            lines = (self.rest + self.buffer[:n]).split(b"\n")
            self.rest = lines.pop()
            for line in lines:
                message = orjson.loads(line)
                if "id" not in message or "method" in message:
                    continue
                id_ = message["id"]
                if id_ in self.ids:
                    self.duplicates += 1
                self.ids.add(id_)
                missing.discard(id_)
                self.errors += "error" in message
        return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--unread", type=float, default=20.0, help="seconds stdout stays unread")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--through-conductor", action="store_true")
    parser.add_argument(
        "--patience", type=float, default=30.0, help="seconds without output before giving up"
    )
    args = parser.parse_args()
    report = run(args.requests, args.unread, args.backend, args.through_conductor, args.patience)
    print(report.text())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
