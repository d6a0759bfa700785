"""Typed decode and encode of single messages (``acp_fast.schema``).

The samples are the params of an agent_message_chunk and of a
tool_call_update notification and of an initialize request, as the wire has
them. Decode is ``schema.decode(cls, raw)`` (what a typed handler gets);
encode is the whole outgoing line as ``send_notification`` / ``send_request``
builds it. The core is not involved; it is recorded anyway.

Target: typed decode of an agent_message_chunk within 1 µs.
"""

from __future__ import annotations

from typing import Any

import pytest

from acp_fast import schema
from acp_fast._async import _wire
from acp_fast._bench._common import CHUNK_PARAMS, INITIALIZE_PARAMS, TOOL_CALL_UPDATE_PARAMS
from acp_fast._core import IMPLEMENTATION
from acp_fast.schema import v1

SAMPLES: dict[str, tuple[Any, bytes]] = {
    "agent_message_chunk": (v1.SessionNotification, CHUNK_PARAMS),
    "tool_call_update": (v1.SessionNotification, TOOL_CALL_UPDATE_PARAMS),
    "initialize": (v1.InitializeRequest, INITIALIZE_PARAMS),
}


def _per_call(benchmark: Any, function: Any, *args: Any) -> Any:
    # Sub-microsecond calls: 1,000 per round, or the timer's own cost (about
    # half a microsecond here) would be most of what a round measures.
    return benchmark.pedantic(function, args, rounds=30, iterations=1000, warmup_rounds=2)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_typed_decode(benchmark: Any, name: str) -> None:
    message_type, raw = SAMPLES[name]
    benchmark.extra_info["core"] = IMPLEMENTATION
    benchmark.extra_info["bytes"] = len(raw)
    message = _per_call(benchmark, schema.decode, message_type, raw)
    assert type(message) is message_type
    assert schema.encode(message) == raw


@pytest.mark.parametrize("name", list(SAMPLES))
def test_encode_line(benchmark: Any, name: str) -> None:
    message_type, raw = SAMPLES[name]
    message = schema.decode(message_type, raw)
    method = message_type.METHOD
    benchmark.extra_info["core"] = IMPLEMENTATION
    if name == "initialize":
        line = _per_call(benchmark, _wire.encode_request, 123456789, method, message)
    else:
        line = _per_call(benchmark, _wire.encode_notification, method, message)
    assert raw in line
