"""The peers of ``acp-fast bench --stdio`` serve every workload (a smoke test:
the figures themselves are the bench's business)."""

from __future__ import annotations

import pytest

from acp_fast._bench._stdio import IGNORED, measure_agent


@pytest.mark.parametrize("agent", ["raw", "builder", "class"])
def test_each_bench_agent_answers_round_trips_streams_and_both_cancels(agent: str) -> None:
    figures = measure_agent(agent, "asyncio", 0.05)
    assert set(figures) == {"rt1", "rt64", "notify", "cancel", "session_cancel"}
    assert figures["rt1"] > 0 and figures["rt64"] > 0 and figures["notify"] > 0
    assert 0 < figures["cancel"] < IGNORED and 0 < figures["session_cancel"] < IGNORED
