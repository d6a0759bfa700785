"""Paths and helpers for the generator tests.

The generator is checked on a small fixture schema (``fixture/v1``) against a
committed golden module (``golden/fixture_v1.py``).  After an intended change to
the generator, update the golden file and review its diff::

    python -m tests.codegen.update_golden
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from codegen import load, pipeline

HERE = Path(__file__).resolve().parent
FIXTURE_DIR = HERE / "fixture"
GOLDEN = HERE / "golden" / "fixture_v1.py"


@cache
def fixture_module() -> str:
    """The module generated from the fixture schema."""
    return pipeline.build_module(load.load(FIXTURE_DIR, "v1", unstable=False))
