"""Untyped JSON: msgspec (what acp_fast uses) beside orjson, on the paths that
handle JSON without a schema class.

* an ``UntypedMessage`` request's params, decoded to dicts and encoded back;
* a line forwarded raw by the conductor (a ``session/update`` notification,
  decoded and re-encoded whole);
* a batch of 64 answers, decoded and encoded as one array.

``python -m pytest benchmarks/test_untyped_json.py`` prints both libraries
side by side; benchmarks/README.md records a run and the decision it led to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import orjson
import pytest

UNTYPED_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "_vendor/echo",
    "params": {"i": 7, "text": "hello world", "tags": ["a", "b"]},
}
FORWARDED_LINE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "session/update",
    "params": {
        "sessionId": "sess-1",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "token " * 20},
        },
    },
}
BATCH: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": i, "result": {"stopReason": "end_turn", "_meta": {"n": i}}}
    for i in range(64)
]
SAMPLES = {"untyped_request": UNTYPED_REQUEST, "forwarded_line": FORWARDED_LINE, "batch_64": BATCH}

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
CODECS: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bytes]]] = {
    "msgspec": (_decoder.decode, _encoder.encode),
    "orjson": (orjson.loads, orjson.dumps),
}


def _per_call(benchmark: Any, function: Callable[[], Any]) -> Any:
    return benchmark.pedantic(function, rounds=30, iterations=200, warmup_rounds=2)


@pytest.mark.parametrize("library", list(CODECS))
@pytest.mark.parametrize("sample", list(SAMPLES))
def test_decode(benchmark: Any, sample: str, library: str) -> None:
    decode, _ = CODECS[library]
    raw = orjson.dumps(SAMPLES[sample])
    assert _per_call(benchmark, lambda: decode(raw)) == SAMPLES[sample]


@pytest.mark.parametrize("library", list(CODECS))
@pytest.mark.parametrize("sample", list(SAMPLES))
def test_encode(benchmark: Any, sample: str, library: str) -> None:
    _, encode = CODECS[library]
    value = SAMPLES[sample]
    assert orjson.loads(_per_call(benchmark, lambda: encode(value))) == value


@pytest.mark.parametrize("library", list(CODECS))
@pytest.mark.parametrize("sample", list(SAMPLES))
def test_forward(benchmark: Any, sample: str, library: str) -> None:
    decode, encode = CODECS[library]
    raw = orjson.dumps(SAMPLES[sample])
    assert orjson.loads(_per_call(benchmark, lambda: encode(decode(raw)))) == SAMPLES[sample]
