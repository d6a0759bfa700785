"""The request table on both cores: the per-request bookkeeping cycles.

Each round runs 64 requests through a cycle with all 64 pending at once (the
C=64 shape):

* settle: new id, register, arm, route the response (take + settle);
* cancel: the same, but the request is cancelled first (the once-only
  take_armed), then its -32800 answer is routed;
* incoming: the peer's request is registered, cancelled by the peer, then
  answered and removed.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

IN_FLIGHT = 64


def test_settle_cycle(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    requests = core_module("requests")
    table = requests.RequestTable(first_id=1 << 20)

    def run() -> int:
        pending = []
        for _ in range(IN_FLIGHT):
            request = table.new_request("session/prompt")
            table.register(request)
            request.arm()
            pending.append(request.id)
        settled = 0
        for request_id in pending:
            request = table.take_response(request_id)
            settled += request.settle(1, None)
        return settled

    benchmark.extra_info["core"] = core_tag
    benchmark.extra_info["requests_per_round"] = IN_FLIGHT
    assert benchmark(run) == IN_FLIGHT


def test_cancel_cycle(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    requests = core_module("requests")
    table = requests.RequestTable(first_id=1 << 20)

    def run() -> int:
        pending = []
        for _ in range(IN_FLIGHT):
            request = table.new_request("session/prompt")
            table.register(request)
            request.arm()
            pending.append(request)
        cancels: int = sum(request.take_armed() for request in pending)
        cancels += sum(request.take_armed() for request in pending)  # the second is refused
        for request in pending:
            table.take_response(request.id).settle(2, None)
        return cancels

    benchmark.extra_info["core"] = core_tag
    benchmark.extra_info["requests_per_round"] = IN_FLIGHT
    assert benchmark(run) == IN_FLIGHT


def test_incoming_cycle(
    benchmark: Any, core_tag: str, core_module: Callable[[str], ModuleType]
) -> None:
    requests = core_module("requests")
    table = requests.RequestTable()

    def run() -> int:
        incoming = [table.register_incoming(n) for n in range(IN_FLIGHT)]
        cancelled = sum(table.cancel_incoming(n) is not None for n in range(IN_FLIGHT))
        for entry in incoming:
            table.remove_incoming(entry)
        return cancelled

    benchmark.extra_info["core"] = core_tag
    benchmark.extra_info["requests_per_round"] = IN_FLIGHT
    assert benchmark(run) == IN_FLIGHT
