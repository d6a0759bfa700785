"""Warnings a peer can cause, logged at a bounded rate.

A peer that floods malformed cancels or answers to ids we never sent must
not make us write a log line per message (docs/semantics.md §1.4): the
first few of each kind are logged, then one line at each power of ten with
the count so far.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ("LimitedLog",)

BURST = 10


class LimitedLog:
    """Per-connection counters of repeated warnings, one per kind."""

    __slots__ = ("_counts", "_log")

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._counts: dict[str, int] = {}

    def warning(self, kind: str, message: str, *args: Any) -> None:
        """Log ``message`` unless ``kind`` was logged too often already."""
        count = self._counts.get(kind, 0) + 1
        self._counts[kind] = count
        if count <= BURST:
            if count == BURST:
                message += " (repeated: from now on logged at each power of ten)"
            self._log.warning(message, *args)
        elif _is_power_of_ten(count):
            self._log.warning(message + " (%d times so far)", *args, count)

    def count(self, kind: str) -> int:
        """How many warnings of ``kind`` were raised, logged or not."""
        return self._counts.get(kind, 0)


def _is_power_of_ten(n: int) -> bool:
    while n >= 10 and n % 10 == 0:
        n //= 10
    return n == 1
