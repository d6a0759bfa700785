"""The soak (tools/soak.py), short: seconds instead of minutes.

Both connections send each other requests with random cancel, detach,
drop, timeout, callbacks and prepared requests, answered at once, later,
cancellably, by a dropped responder, by an exception or with an error.
Every outcome must match what the receiver did, and at the end both request
tables and cancellation registries are empty, no task is left and no id
saw two cancels. The full run (a million requests, RSS reported) is
``python tools/soak.py``.
"""

from __future__ import annotations

import pytest

from tools.soak import soak

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("transport", ["memory", "socket"])
async def test_soak_short(transport):
    report = await soak(4000, concurrency=32, transport=transport, samples=2)
    assert report.failures == [], report.text()
    for table in report.tables.values():
        assert set(table.values()) == {0}, report.text()
    assert report.tasks_after == report.tasks_before
    # Every way of sending and answering was exercised.
    seen = {key for counts in report.outcomes.values() for key in counts}
    for outcome in (
        "await:result",
        "cancel:cancelled",
        "await:dropped",
        "await:raised",
        "await:error",
        "cancel:result",
        "callback:result",
        "detach",
        "drop",
        "prepared-dropped",
        "prepared:result",
        "timeout-gave-up",
    ):
        assert outcome in seen, (outcome, report.text())
