"""One benchmark process: ``python -m acp_fast._bench._worker ...``.

``--sdk fast|official --workloads a,b,...`` runs the workloads in order, each
on a fresh connection, and prints one JSON object per line as each finishes
(the parent shows progress from them). ``--peer fast|official`` serves the
bench agent on stdio instead (the child of a stdio workload).

A workload is ``<kind>:<transport>:<concurrency>`` (``rt:socket:64``,
``notify:socket:0``, ``rt:stdio:64``) or ``codec``. Which core runs is chosen
by the environment the parent gives this process (``ACP_FAST_NO_EXTENSIONS``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ("main",)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_fast._bench._worker")
    parser.add_argument("--sdk", choices=("fast", "official", "compat"))
    parser.add_argument("--peer", choices=("fast", "official", "compat"))
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--workloads", default="")
    parser.add_argument("--warmup", type=float, default=0.3)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args(argv)

    if args.peer == "fast":
        from ._fast import run_peer

        run_peer(args.backend)
        return 0
    if args.peer == "compat":
        from ._compat import run_peer as run_compat_peer

        run_compat_peer()
        return 0
    if args.peer == "official":
        from ._official import run_peer as run_official_peer

        run_official_peer()
        return 0

    for workload in filter(None, args.workloads.split(",")):
        result: dict[str, Any] = {"workload": workload}
        result.update(_run(args.sdk, workload, args.backend, args.warmup, args.seconds))
        print(json.dumps(result), flush=True)
    return 0


def _run(sdk: str, workload: str, backend: str, warmup: float, seconds: float) -> dict[str, Any]:
    if sdk == "fast":
        import anyio

        from acp_fast._core import IMPLEMENTATION

        from . import _fast

        info: dict[str, Any] = {"core": IMPLEMENTATION, "backend": backend}
        if workload == "codec":
            return {**info, **_fast.codec_costs()}
        kind, transport, concurrency = workload.split(":")
        rate = anyio.run(
            _fast.run_workload,
            kind,
            transport,
            int(concurrency),
            warmup,
            seconds,
            backend,
            backend=backend,
        )
        return {**info, "rate": rate}

    import asyncio

    if sdk == "compat":
        from . import _compat

        info = {"core": _compat.core(), "backend": "asyncio"}
        if workload == "codec":
            return {**info, **_compat.codec_costs()}
        _official = _compat.official_code()
    else:
        from . import _official

        info = {"core": "-", "backend": "asyncio", "version": _official.VERSION}
        if workload == "codec":
            return {**info, **_official.codec_costs()}
    kind, transport, concurrency = workload.split(":")
    rate = asyncio.run(_official.run_workload(kind, transport, int(concurrency), warmup, seconds))
    return {**info, "rate": rate}


if __name__ == "__main__":
    sys.exit(main())
