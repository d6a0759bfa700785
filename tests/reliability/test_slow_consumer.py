"""A client that floods requests and leaves the answers unread (tools/slow_consumer.py).

Output backpressure (docs/semantics.md §2.4): once about 1 MiB of answers is
unwritten, the agent (and each conductor hop) holds back the next request
until the client reads, so the flood waits in the pipes instead of in the
agent's memory; then every request is answered exactly once. The full run
(a million requests, 20 s unread) is ``python tools/slow_consumer.py``.

The tool itself is checked against a scripted peer: answers leave in writes of
any size (docs/semantics.md §1.1), so the tool must count answers by id.
"""

from __future__ import annotations

import sys

import pytest

from tools.slow_consumer import LIMIT, run


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("through_conductor", [False, True], ids=["agent", "conductor"])
def test_unread_answers_hold_the_flood_back_and_memory_stays_bounded(
    backend: str, through_conductor: bool
) -> None:
    report = run(60_000, unread=2.0, backend=backend, through_conductor=through_conductor)
    assert report.answered == report.requests, report.text()
    assert report.duplicates == 0 and report.errors == 0, report.text()
    # The flood was held back: the writer could not hand everything over.
    assert report.stalled_after < report.requests, report.text()
    for process, growth in report.growth.items():
        assert growth <= LIMIT, f"{process}: {report.text()}"


# A stand-in agent for a flood of requests 0 to LAST. `split LAST`: the
# answers to the last warm-up request and to request LAST are written only
# once the reader has taken every byte before them, so each comes in a read
# of its own. `drop LAST ID`: request ID is never answered (the peer says so
# on stderr, where it names its mode first), and the output ends after the
# answer to request LAST.
PEER = """
import array, fcntl, json, os, sys, termios, time

mode, last = sys.argv[1], int(sys.argv[2])
dropped = int(sys.argv[3]) if mode == "drop" else None
print(f"peer: {mode}", file=sys.stderr, flush=True)

def unread():
    n = array.array("i", [0])
    fcntl.ioctl(1, termios.FIONREAD, n)
    return n[0]

def send(message):
    data = json.dumps(message).encode() + b"\\n"
    while data:
        data = data[os.write(1, data):]

for line in sys.stdin.buffer:
    request = json.loads(line)
    id_ = request["id"]
    if request["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": id_, "result": {"protocolVersion": 1}})
        continue
    if id_ == dropped:
        print(f"not answering {id_}", file=sys.stderr, flush=True)
        continue
    if mode == "split" and id_ in ("w999", last):
        while unread():
            time.sleep(0.001)
    send({"jsonrpc": "2.0", "id": id_, "result": request["params"]})
    if mode == "drop" and id_ == last:
        break
"""


def test_answers_split_across_reads_are_counted_by_id() -> None:
    # The last warm-up answer arrives after the warm-up's other answers were
    # read, and the flood's last answer after all the others: a reader that
    # counted lines would take the late warm-up answer for a request's and
    # stop one answer short.
    report = run(2000, unread=0.0, agent=[sys.executable, "-c", PEER, "split", "1999"])
    assert (report.answered, report.missing) == (2000, []), report.text()
    assert report.duplicates == 0 and report.errors == 0, report.text()
    assert report.stderr == "peer: split\n"
    assert "stderr" not in report.text()  # shown only when answers are wrong


def test_a_request_never_answered_is_reported_by_id() -> None:
    report = run(2000, unread=0.0, agent=[sys.executable, "-c", PEER, "drop", "1999", "1234"])
    assert (report.answered, report.missing) == (1999, [1234]), report.text()
    assert "no answer to 1234" in report.text()
    assert not report.ok
    # What the processes logged comes with the report: which side lost it.
    assert "stderr (last lines):\npeer: drop\nnot answering 1234\n" in report.text()
