"""Fixtures of the pytest-benchmark suites (``python -m pytest benchmarks``).

* ``core_module(name)`` parametrizes a benchmark over the compiled and the pure
  core where it calls the core directly (``acp_fast._core._framing_c`` and
  ``_framing_py``, ...); the compiled variant is skipped when it is not built
  or ``ACP_FAST_NO_EXTENSIONS`` is set.
* ``backend`` runs connection benchmarks on asyncio and on trio; ``portal``
  is an event loop of that backend in a thread, so that pytest-benchmark's
  synchronous rounds can drive async workloads (one ``portal.call`` per round,
  its cost amortised over hundreds of messages).
* Every benchmark records what ran in ``extra_info``: the core the connection
  used (``acp_fast._core.IMPLEMENTATION``) or the core module benchmarked, and
  the backend. Rates per second go there too (``per_second``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

NO_EXTENSIONS = os.environ.get("ACP_FAST_NO_EXTENSIONS", "") not in ("", "0")


def _core_params() -> list[Any]:
    compiled = pytest.param(
        "c",
        id="c",
        marks=pytest.mark.skipif(NO_EXTENSIONS, reason="ACP_FAST_NO_EXTENSIONS is set"),
    )
    return [compiled, pytest.param("py", id="py")]


@pytest.fixture(params=_core_params())
def core_tag(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def core_module(core_tag: str) -> Callable[[str], ModuleType]:
    """``core_module("framing")`` is ``acp_fast._core._framing_<tag>``."""

    def load(name: str) -> ModuleType:
        try:
            return importlib.import_module(f"acp_fast._core._{name}_{core_tag}")
        except ImportError:
            pytest.skip("the compiled core is not built")

    return load


@pytest.fixture(params=["asyncio", "trio"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def portal(backend: str) -> Iterator[BlockingPortal]:
    with start_blocking_portal(backend) as running:
        yield running


@pytest.fixture
def connection_info(benchmark: Any, backend: str) -> dict[str, Any]:
    """Record the connection's core and backend with the benchmark."""
    from acp_fast._core import IMPLEMENTATION

    benchmark.extra_info["core"] = IMPLEMENTATION
    benchmark.extra_info["backend"] = backend
    return benchmark.extra_info  # type: ignore[no-any-return]


def record_rate(benchmark: Any, per_round: int) -> None:
    """Operations per second from the median round of ``per_round`` operations."""
    if benchmark.stats is None:  # --benchmark-disable: the rounds ran once, untimed
        return
    median = benchmark.stats.stats.median
    benchmark.extra_info["per_round"] = per_round
    benchmark.extra_info["per_second"] = round(per_round / median) if median else None
