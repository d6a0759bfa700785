"""20,000 notifications to a handler that takes 3 s each (see backpressure.py).

A measurement, not a speed test: it runs once per backend in a fresh process
(so the memory baseline is its own), records the RSS growth and the sender's
progress in ``extra_info``, and checks its targets: memory grows
by at most 10 MiB, and the sender is paced (it stops far short of 20,000,
and sends nothing more after its first second while the handler sleeps).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("backpressure.py")


def test_backpressure(benchmark: Any, backend: str) -> None:
    def run() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, str(SCRIPT), "--backend", backend, "--seconds", "6.5"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    result = benchmark.pedantic(run, rounds=1, iterations=1)
    timeline = result.pop("timeline")
    benchmark.extra_info.update(result)
    assert result["rss_growth_mib"] <= 10
    assert not result["sender_finished"]
    assert result["sent_at_end"] < result["notifications"] // 2
    assert result["sent_at_end"] == result["sent_at_1s"], timeline
