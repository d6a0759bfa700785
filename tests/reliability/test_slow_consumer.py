"""A client that floods requests and leaves the answers unread (tools/slow_consumer.py).

Output backpressure (docs/semantics.md §2.4): once about 1 MiB of answers is
unwritten, the agent (and each conductor hop) holds back the next request
until the client reads, so the flood waits in the pipes instead of in the
agent's memory; then every request is answered exactly once. The full run
(a million requests, 20 s unread) is ``python tools/slow_consumer.py``.
"""

from __future__ import annotations

import pytest

from tools.slow_consumer import LIMIT, run

pytestmark = pytest.mark.slow


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
