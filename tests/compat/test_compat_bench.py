"""The compat row of ``acp-fast bench`` runs: the official SDK's benchmark code on compat."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_compat_worker_measures_every_workload():
    workloads = "rt:socket:1,rt:socket:64,notify:socket:0,rt:stdio:64,codec"
    command = [sys.executable, "-m", "acp_fast._bench._worker", "--sdk", "compat"]
    command += ["--workloads", workloads, "--warmup", "0.01", "--seconds", "0.05"]
    out = subprocess.run(command, capture_output=True, text=True, timeout=50, check=True)
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["workload"] for r in results] == workloads.split(",")
    for result in results[:-1]:
        assert result["rate"] > 0, result
    assert 0 < results[-1]["decode"] < 1e-3 and 0 < results[-1]["encode"] < 1e-3
