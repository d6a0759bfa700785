"""Prepared requests: an id now, on the wire only when consumed."""

from __future__ import annotations

import anyio
from _slow_agent import backend, client_of_slow_agent

import acp_fast as acp


async def main() -> None:
    async with client_of_slow_agent() as cx:
        prepared = cx.prepare_request(acp.UntypedMessage("slow", {}))
        handle = prepared.cancellation_handle()
        handle.cancel()  # not published yet: a no-op, and not remembered
        print(f"client: prepared request {prepared.id}, nothing sent yet")

        outcome = anyio.Event()

        def on_result(result: object) -> None:
            # Runs in the dispatch loop: the next incoming message waits for it.
            print(f"client: callback got {result}")
            outcome.set()

        # Publishing with a callback: the callback is in place before the
        # request can be answered, so nothing can be missed or reordered.
        prepared.on_receiving_result(on_result)
        handle.cancel()  # published now: this sends the one cancel
        await outcome.wait()


anyio.run(main, backend=backend())
