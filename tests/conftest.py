"""Fixtures shared by the whole suite.

* ``core`` runs a test once per core implementation: ``c`` (compiled) and
  ``py`` (pure Python), through one fixture, so test bodies never name one.
  The ``c`` variant carries the ``c_extension`` marker; it is deselected by
  ``--no-c-extensions`` and when ACP_FAST_NO_EXTENSIONS is set. When it is
  selected and the compiled modules are missing, the tests fail: a broken
  build never passes as a pure one.
* ``anyio_backend`` runs every async test on asyncio and on trio.
"""

from __future__ import annotations

import pytest

from tests.helpers import NO_EXTENSIONS, CoreImpl


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-c-extensions",
        action="store_true",
        default=False,
        help="deselect tests of the compiled core",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (config.getoption("--no-c-extensions") or NO_EXTENSIONS):
        return
    kept, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker("c_extension") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


CORE_IMPLS = [
    pytest.param(CoreImpl("c"), id="c", marks=pytest.mark.c_extension),
    pytest.param(CoreImpl("py"), id="py"),
]


@pytest.fixture(params=CORE_IMPLS, scope="session")
def core(request: pytest.FixtureRequest) -> CoreImpl:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]
