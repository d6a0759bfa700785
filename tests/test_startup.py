"""The start-up measurement of ``acp-fast bench``, on real agent subprocesses."""

from __future__ import annotations

import sys

import pytest

from acp_fast._bench._startup import command_for, measure, spawn_to_answer


@pytest.mark.parametrize(
    ("sdk", "backend"), [("fast", "asyncio"), ("fast", "trio"), ("official", "asyncio")]
)
def test_each_agent_answers_initialize_after_spawn(sdk: str, backend: str) -> None:
    seconds = spawn_to_answer(command_for(sdk, backend))
    assert 0 < seconds < 30


def test_an_agent_that_never_answers_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="did not answer initialize"):
        measure([sys.executable, "-c", "import sys; sys.stdin.readline()"], count=1)
