"""Rewrite ``golden/fixture_v1.py`` from the fixture schema: ``python -m tests.codegen.update_golden``."""

from __future__ import annotations

from tests.codegen.support import GOLDEN, fixture_module

if __name__ == "__main__":
    GOLDEN.write_text(fixture_module(), encoding="utf-8")
    print(f"wrote {GOLDEN}")
