"""A cancellation handle as a guard, and as a "stop button" held elsewhere."""

from __future__ import annotations

import anyio
from _slow_agent import backend, client_of_slow_agent

import acp_fast as acp


async def main() -> None:
    async with client_of_slow_agent() as cx:
        # 1. A guard: leaving the block before the answer cancels the request.
        sent = cx.send_request(acp.UntypedMessage("slow", {}))
        try:
            with sent.cancellation_handle():
                raise RuntimeError("the caller bailed out")
        except RuntimeError as exc:
            print(f"client: {exc}; the guard cancelled request {sent.id}")
        sent.detach()  # not interested in its answer any more

        # 2. A stop button: the handle goes to whoever may stop the work, and
        #    the request itself is awaited here. Handles share the request's
        #    once-only state: pressing twice sends one cancel.
        sent = cx.send_request(acp.UntypedMessage("slow", {}))
        stop_button = sent.cancellation_handle()
        stop_button.cancel()
        stop_button.clone().cancel()
        try:
            await sent
        except acp.Error as error:
            print(f"client: request {sent.id} stopped: {error.message}")


anyio.run(main, backend=backend())
