"""Property-based fuzzing of the framer, the classifier and the dispatcher.

Each property is checked on both cores (compiled and pure) against an
oracle written here from the specification (docs/semantics.md §1.1,
§1.4, §1.5), not from the code, and the two cores must agree byte for byte.
The dispatcher runs in two ways: the loop-free driver of ``fuzz/driver.py``
(many examples, fast) and a real connection on asyncio and trio (fewer),
which must write exactly what the driver wrote.

Every test is bounded: a fixed number of examples, no deadline, a few
seconds each. Long runs: ``python fuzz/fuzz_dispatch.py`` (atheris).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_fast._async import _wire
from acp_fast._core import (
    ERROR_RESPONSE,
    INVALID_CALL,
    INVALID_RESPONSE,
    MISSING,
    NOTIFICATION,
    PARAMS_ABSENT,
    REQUEST,
    RESULT_RESPONSE,
    SHAPE_CALL,
    SHAPE_RESPONSE,
    SHAPE_UNKNOWN,
)
from fuzz.driver import ECHO, FAIL, check_output, dispatch, server_builder, use_core
from tests.helpers import CoreImpl
from tests.support import serving

pytestmark = pytest.mark.c_extension  # compares the compiled core with the pure one

CORES = (CoreImpl("c"), CoreImpl("py"))
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- the oracle: the specification, restated -------------------------------------


def valid_id(value: Any) -> bool:
    if value is None or type(value) is str:
        return True
    return type(value) is int and -(2**63) <= value < 2**63


def oracle_kind(message: dict[str, Any]) -> int:
    has_result, has_error = "result" in message, "error" in message
    if "method" in message:
        params = message.get("params")
        if (
            has_result
            or has_error
            or type(message["method"]) is not str
            or not (params is None or type(params) in (dict, list))
            or message.get("jsonrpc", MISSING) != "2.0"
        ):
            return INVALID_CALL
        if "id" not in message:
            return NOTIFICATION
        return REQUEST if valid_id(message["id"]) else INVALID_CALL
    if has_result or has_error:
        if has_result and has_error:
            return INVALID_RESPONSE
        if (
            "id" not in message
            or not valid_id(message["id"])
            or message.get("jsonrpc", MISSING) != "2.0"
        ):
            return INVALID_RESPONSE
        return RESULT_RESPONSE if has_result else ERROR_RESPONSE
    return INVALID_CALL


INVALID = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}


def oracle_entry(message: Any) -> list[Any]:
    """The replies of fuzz/driver.py's server to one object (or batch entry)."""
    if type(message) is not dict:
        return [INVALID]
    kind = oracle_kind(message)
    if kind == INVALID_CALL:
        return [INVALID]
    if kind != REQUEST:
        return []  # notifications, and responses nobody waits for
    request_id, method = message["id"], message["method"]
    if method == ECHO:
        return [{"jsonrpc": "2.0", "id": request_id, "result": {"params": message.get("params")}}]
    if method == FAIL:
        data = {"details": "ValueError: fuzz"}
        return [
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32603, "message": "Internal error", "data": data},
            }
        ]
    error = {"code": -32601, "message": "Method not found", "data": method}
    return [{"jsonrpc": "2.0", "id": request_id, "error": error}]


def oracle_line(value: Any) -> list[Any]:
    if type(value) is list:
        if not value:
            return [INVALID]
        slots = [reply for entry in value for reply in oracle_entry(entry)]
        return [slots] if slots else []
    return oracle_entry(value)


# --- strategies ---------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
ids = st.integers(-(2**64), 2**64) | st.text(max_size=5) | json_values
methods = st.sampled_from([ECHO, FAIL, "nope", "note", "$/cancel_request", "_x/y"]) | json_values
params = (
    st.none()
    | st.dictionaries(st.text(max_size=4), json_values, max_size=3)
    | st.lists(json_values, max_size=3)
    | scalars
)
jsonrpc = st.sampled_from(["2.0", "2.0", "2.0", "1.0", "2", 2.0, None])


def _envelope(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


# Mostly well-formed messages, with every field optional and of any type.
messages = st.one_of(
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": ids, "method": st.sampled_from([ECHO, FAIL, "nope"])},
        optional={
            "params": st.dictionaries(st.text(max_size=4), json_values, max_size=3) | st.none()
        },
    ),
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "method": methods}, optional={"params": params}
    ),
    _envelope(
        jsonrpc=jsonrpc,
        id=ids,
        method=methods,
        params=params,
        result=json_values,
        error=json_values,
        extra=json_values,
    ),
)
line_values = st.one_of(messages, st.lists(messages | json_values, max_size=4), json_values)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[Any], bytes]:
    """Lines of JSON (with CRLF, blank lines), and the stream of them."""
    values = draw(st.lists(line_values, min_size=1, max_size=6))
    parts = []
    for value in values:
        text = json.dumps(
            value,
            ensure_ascii=draw(st.booleans()),
            separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])),
        )
        parts.append(text.encode() + draw(st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\n \n"])))
    return values, b"".join(parts)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]
    out, start = [], 0
    for point in points:
        out.append(data[start:point])
        start = point
    return [c for c in out if c]


def decoded(output: bytes) -> list[Any]:
    return [json.loads(line) for line in output.splitlines()]


@pytest.fixture(autouse=True)
def _quiet_logs():
    # Handlers and bad input log on purpose; thousands of records slow the run.
    logging.getLogger("acp_fast").disabled = True
    yield
    logging.getLogger("acp_fast").disabled = False


# --- framer --------------------------------------------------------------------------


def reference_split(stream: bytes, max_line: int, head_size: int) -> list[Any]:
    head_size = min(head_size, max_line)
    *complete, rest = stream.split(b"\n")
    out: list[Any] = []
    for line in complete:
        if len(line) > max_line:
            out.append(("oversized", len(line), line[:head_size], True))
        elif line.removesuffix(b"\r"):
            out.append(line.removesuffix(b"\r"))
    if len(rest) > max_line:
        out.append(("oversized", len(rest), rest[:head_size], False))
    elif rest.removesuffix(b"\r"):
        out.append(rest.removesuffix(b"\r"))
    return out


def plain(item: Any) -> Any:
    return item if isinstance(item, bytes) else ("oversized", item.size, item.head, item.complete)


@FAST
@given(
    stream=st.lists(
        st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b"{", b"\xff", b"xyz" * 5]), max_size=60
    ).map(b"".join),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    max_line=st.integers(1, 40),
    head_size=st.integers(1, 50),
)
def test_framer_matches_the_reference_split(stream, cuts, max_line, head_size):
    expected = reference_split(stream, max_line, head_size)
    for core in CORES:
        framer = core.LineBuffer(max_line, head_size)
        out = [plain(x) for chunk in chunked(stream, cuts) for x in framer.feed(chunk)]
        rest = framer.close()
        if rest is not None:
            out.append(plain(rest))
        assert out == expected, core.tag


# --- classifier ------------------------------------------------------------------------


@FAST
@given(
    message=_envelope(
        jsonrpc=jsonrpc,
        id=ids,
        method=methods,
        params=params,
        result=json_values,
        error=json_values,
    )
)
def test_classifier_matches_the_oracle(message):
    line = json.dumps(message).encode()
    envelope = _wire.decode_envelope(line)
    raw_params = envelope.params
    expected = oracle_kind(message)
    for core in CORES:
        # As a single message: fields from the envelope, params still raw.
        kind = core.classify(
            envelope.jsonrpc,
            envelope.id,
            envelope.method,
            PARAMS_ABSENT if raw_params is MISSING else memoryview(raw_params)[0],
            envelope.result is not MISSING,
            envelope.error is not MISSING,
        )
        assert kind == expected, (core.tag, message)
        # As a batch entry: fields from the decoded dict.
        entry = json.loads(line)
        kind = core.classify(
            entry.get("jsonrpc", MISSING),
            entry.get("id", MISSING),
            entry.get("method", MISSING),
            PARAMS_ABSENT if "params" not in entry else core.params_head_of(entry["params"]),
            "result" in entry,
            "error" in entry,
        )
        assert kind == expected, (core.tag, message)


def oracle_head(message: dict[str, Any]) -> tuple[Any, int]:
    request_id = message.get("id", MISSING)
    if not valid_id(request_id) or (type(request_id) is str and _lone_surrogate(request_id)):
        request_id = MISSING
    if "method" in message:
        return request_id, SHAPE_CALL
    if "result" in message or "error" in message:
        return request_id, SHAPE_RESPONSE
    return request_id, SHAPE_UNKNOWN


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


@FAST
@given(
    message=_envelope(
        jsonrpc=jsonrpc,
        id=ids,
        method=methods,
        params=params,
        result=json_values,
        error=json_values,
    ),
    ascii_only=st.booleans(),
    padding=st.integers(0, 3),
)
def test_head_scanner_reads_what_a_full_decode_reads(message, ascii_only, padding):
    """On a whole object, scan_head finds the id and the shape it has."""
    space = " " * padding
    text = json.dumps(message, ensure_ascii=ascii_only, separators=("," + space, ":" + space))
    head = text.encode("utf-8", "surrogatepass")
    expected = oracle_head(message)
    for core in CORES:
        assert core.scan_head(head) == expected, core.tag
        # A cut anywhere never raises and never invents an id.
        for cut in range(0, len(head), max(1, len(head) // 3)):
            found, _ = core.scan_head(head[:cut])
            assert found is MISSING or found == expected[0]


# --- dispatcher: loop-free driver --------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_dispatcher_answers_well_formed_json_as_specified(stream, cuts):
    values, data = stream
    expected = [reply for value in values for reply in oracle_line(value)]
    outputs = []
    for core in CORES:
        with use_core(core.tag):
            output, conn = dispatch(chunked(data, cuts), max_message_size=1 << 20)
            assert check_output(data, output, conn) == expected, core.tag
        outputs.append(output)
    assert outputs[0] == outputs[1]


@st.composite
def mangled(draw: st.DrawFn) -> bytes:
    """A stream of JSON lines, then damaged: bytes cut, inserted, flipped, repeated."""
    _, data = draw(streams())
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["cut", "insert", "flip", "repeat", "pad"]))
        at = draw(st.integers(0, len(data)))
        if op == "cut":
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "insert":
            data[at:at] = draw(
                st.binary(min_size=1, max_size=4)
                | st.sampled_from([b"\n", b"[", b"{", b'"', b"\\", b"1e400", b"\xff", b"\\ud800"])
            )
        elif op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 40))] * draw(st.integers(1, 30))
        elif op == "pad":
            data[at:at] = b"[" * draw(st.integers(1, 600))
    return bytes(data)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mangled() | st.binary(max_size=1500), cuts=st.lists(st.integers(0, 3000), max_size=8))
def test_dispatcher_survives_any_bytes_and_both_cores_agree(data, cuts):
    outputs = []
    for core in CORES:
        with use_core(core.tag):
            output, conn = dispatch(chunked(data, cuts))
            check_output(data, output, conn)
        outputs.append(output)
    assert outputs[0] == outputs[1]


# --- dispatcher: a real connection on asyncio and trio -------------------------------------


async def _through_connection(chunks: list[bytes]) -> bytes:
    async with serving(server_builder()) as peer:
        for chunk in chunks:
            peer.channel.write(chunk)
        await peer.close_output()
        lines = []
        while True:
            try:
                lines.append(await peer.receive_line())
            except EOFError:
                break
    return b"".join(line + b"\n" for line in lines)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_real_connection_writes_what_the_driver_writes(backend):
    # One hypothesis run per backend; anyio.run per example.
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=mangled(), cuts=st.lists(st.integers(0, 3000), max_size=8))
    def check(data: bytes, cuts: list[int]) -> None:
        chunks = chunked(data, cuts)
        expected, _ = dispatch(chunks)
        assert anyio.run(_through_connection, chunks, backend=backend) == expected

    check()


# --- the long-run harness ------------------------------------------------------------------


def test_the_atheris_harness_runs_under_plain_python():
    """``fuzz/fuzz_dispatch.py --selftest``: seeds and mutations, no atheris."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, str(root / "fuzz" / "fuzz_dispatch.py"), "--selftest", "400"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("selftest: ") and result.stdout.rstrip().endswith("ok")
    assert "cores c+py" in result.stdout
