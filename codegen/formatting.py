"""``ruff format`` for generated text, with settings independent of the project's.

The settings are spelled out (``--isolated``) so that a change to the project's
ruff configuration cannot make the committed output look stale.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Final

from codegen.load import InputError

SETTINGS: Final = ("--line-length", "100", "--target-version", "py310")


def ruff_format(text: str) -> str:
    """Return ``text`` formatted by ruff (run from the current interpreter's environment)."""
    command = [sys.executable, "-m", "ruff", "format", "--isolated", *SETTINGS, "-"]
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    except OSError as exc:  # pragma: no cover - broken environment
        raise InputError(f"cannot run ruff: {exc}") from None
    if done.returncode != 0:
        raise InputError(f"ruff format failed: {done.stderr.strip()[:500]}")
    return done.stdout
