"""Run an official-SDK program on acp_fast.compat, changing its imports only.

    python compat_run.py <script.py> [args...]

``import acp`` (and ``acp.schema``, ``acp.helpers``, ``acp.interfaces``) in the
script resolve to ``acp_fast.compat``; nothing else about it changes. The
interop tests run the official-SDK peers (peers/py_agent.py,
peers/py_client.py) this way.
"""

from __future__ import annotations

import runpy
import sys

import acp_fast.compat as compat


def main() -> None:
    sys.modules["acp"] = compat
    sys.modules["acp.schema"] = compat.schema
    sys.modules["acp.helpers"] = compat.helpers
    sys.modules["acp.interfaces"] = compat.interfaces
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
