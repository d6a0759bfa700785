"""Fixtures for the generator tests (helpers are in ``support``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen import pipeline


@pytest.fixture(scope="session")
def built() -> dict[Path, str]:
    """All four real modules, generated once per test session (a few seconds)."""
    return pipeline.build()
