"""A pass-through test proxy: ``python proxy_script.py [asyncio|trio]``.

Only the default forwarding of ``acp.Proxy`` (docs/semantics.md §5.6), plus a
line on stderr for each ``$/cancel_request`` it sees from either side, to
show where cancellations travel.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

import acp_fast as acp


def build() -> acp.Builder[Any]:
    proxy = acp.Proxy.builder().name("pass-through-proxy")

    async def log_cancel(message: acp.UntypedMessage, cx: Any) -> Any:
        print(f"[pass-through-proxy] cancel {message.params!r}", file=sys.stderr, flush=True)
        return acp.NOT_HANDLED  # the default drops it; its translation already went

    proxy.on_receive_notification(log_cancel, "$/cancel_request", peer=acp.Client)
    proxy.on_receive_notification(log_cancel, "$/cancel_request", peer=acp.Agent)
    return proxy


if __name__ == "__main__":
    anyio.run(
        build().connect_to, acp.stdio(), backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    )
