"""Malformed input: every line of a corpus gets its exact reply, or none.

Each case is one or more raw lines a peer writes, and the exact JSON values
the connection must write back (docs/semantics.md §1.1, §1.3–§1.5; the
official Python SDK's failures are in python-sdk-anchor §4). After each
case the peer asks a normal request, and its answer must come next: nothing
more was written, the connection is alive, and later input is served.

Decisions this corpus pins down where the reference leaves room:

* JSON that our decoder cannot read although it is well-formed (a number out
  of range such as ``1e400``, nesting deeper than the decoder follows) is a
  parse error, -32700 with ``data.line``, as serde_json reports it to the
  Rust SDK. Each of these once ended the connection.
* Invalid UTF-8 inside a string the envelope decoder reads (method, id) makes
  the line unparsable (-32700). Inside params, the envelope is still read, so
  the request is answered by its id: a typed handler gets -32602 (the params
  are not echoed, since they cannot be read). Nothing is lost either way.
* A line over the size cap is answered -32600 with ``data.reason`` =
  ``"message_too_large"``, under its top-level id wherever it is in the line
  (else null); an answer to one of our requests fails that request.
* Duplicate keys: the last one wins (as msgspec and serde_json's Value do).
* ``_meta`` never shadows a parameter: it is its own field.
"""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest

import acp_fast as acp
from acp_fast.schema import v1
from tests.support import SIMPLE, TIMEOUT, RawPeer, echo, serving

pytestmark = pytest.mark.anyio

CAP = 64 * 1024  # the size cap of the connection under test


# Why a line that is JSON could not be read (docs/semantics.md §1.3); a line
# that is not JSON at all carries only its text, as the Rust SDK's does.
TOO_DEEP = "nested too deeply to decode"
OUT_OF_RANGE = "a number out of range"
LONE_SURROGATE = "a string with an unpaired surrogate escape"


def parse_error(line: bytes, reason: str | None = None) -> dict[str, Any]:
    text = line.decode("utf-8", "replace")
    if len(text) > 4096:
        text = text[:4096] + f"... ({len(line)} bytes)"
    data = {"line": text} if reason is None else {"line": text, "error": reason}
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error", "data": data},
    }


def _as_parse_error(message: Any, line: bytes) -> Any:
    """``"parse_error"`` (with its reason) when ``message`` is the parse
    error for ``line``, else ``message`` itself."""
    for reason in (None, TOO_DEEP, OUT_OF_RANGE, LONE_SURROGATE):
        if message == parse_error(line, reason):
            return "parse_error" if reason is None else f"parse_error: {reason}"
    return message


INVALID = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request"}}


def req(request_id: Any, message: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": SIMPLE,
        "params": {"message": message},
        **extra,
    }


def line_of(value: Any) -> bytes:
    return orjson.dumps(value)


def answer(request_id: Any, message: str = "hi") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"result": f"echo: {message}"}}


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def too_large(request_id: Any, size: int) -> dict[str, Any]:
    data = {"reason": "message_too_large", "size": size, "limit": CAP}
    return error(request_id, -32600, "Invalid request", data)


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def new_session(request_id: Any, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": params}


TRUNCATED = line_of(req(7))[:-12]
DEEP = (
    b'{"jsonrpc":"2.0","id":1,"method":"simple_method","params":{"message":'
    + b"[" * 20000
    + b"]" * 20000
    + b"}}"
)
DEEP_BATCH = b"[" * 30000 + b"]" * 30000
BIG_REQUEST = line_of(req(11, "x" * (CAP + 10)))
BIG_NOTIFICATION = line_of(notification("big/note", {"blob": "y" * (CAP + 10)}))
BIG_ID_LATE = (
    b'{"jsonrpc":"2.0","method":"simple_method","params":{"message":"'
    + b"z" * (CAP + 10)
    + b'"},"id":12}'
)
BIG_STRING_ID_LATE = (
    b'{"method":"simple_method","params":{"message":"'
    + b"z" * (CAP + 10)
    + b'"} , "id" : "late" ,"jsonrpc":"2.0"}'
)
# Only a nested "id" after the payload: not the message's id.
BIG_NESTED_ID = (
    b'{"jsonrpc":"2.0","method":"m","params":{"blob":"' + b"z" * (CAP + 10) + b'","id":99}}'
)
# "id" inside a string that ends the payload: the quotes are escaped.
BIG_ESCAPED_ID = b'{"jsonrpc":"2.0","method":"m","params":"' + b"z" * (CAP + 10) + b'\\","id":7"}'
BIG_HEAD_ID = (
    b'{"id":' + b"1" * 5000 + b',"jsonrpc":"2.0","method":"m","params":"' + b"w" * CAP + b'"}'
)
BIG_SURROGATE_ID = b'{"id":"\\ud800","jsonrpc":"2.0","method":"m","params":"' + b"w" * CAP + b'"}'
# The head the framer keeps of an oversized line is its first CAP bytes here:
# this one ends inside the number 0.5, which must not be read as the id 0.
_HEAD_START = b'{"jsonrpc":"2.0","method":"m","params":"'
BIG_ID_CUT = (
    _HEAD_START
    + b"p" * (CAP - len(_HEAD_START) - len(b'","id":0.'))
    + b'","id":0.5,"more":"'
    + b"q" * 100
    + b'"}'
)
UTF8_IN_METHOD = b'{"jsonrpc":"2.0","id":3,"method":"simple\xff_method","params":{}}'
UTF8_IN_PARAMS = (
    b'{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/a\xff","mcpServers":[]}}'
)
OVERLONG = b'{"jsonrpc":"2.0","id":5,"method":"\xc0\xaf"}'
SURROGATE_ID = b'{"jsonrpc":"2.0","id":"\\ud800","method":"simple_method","params":{"message":"a"}}'
NUMBER_RANGE_PARAMS = (
    b'{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":1e400,"mcpServers":[]}}'
)

# (name, lines written, exact replies expected before the next answer)
CASES: list[tuple[str, list[bytes], list[Any]]] = [
    # -- not JSON -----------------------------------------------------------
    ("invalid_json", [b"{not json}"], [parse_error(b"{not json}")]),
    ("truncated_line", [TRUNCATED], [parse_error(TRUNCATED)]),
    ("trailing_garbage", [line_of(req(7)) + b" x"], [parse_error(line_of(req(7)) + b" x")]),
    ("two_objects_one_line", [line_of(req(7)) * 2], [parse_error(line_of(req(7)) * 2)]),
    (
        "nan_literal",
        [b'{"jsonrpc":"2.0","id":1,"method":"m","params":[NaN]}'],
        [parse_error(b'{"jsonrpc":"2.0","id":1,"method":"m","params":[NaN]}')],
    ),
    ("nul_byte", [b"\x00"], [parse_error(b"\x00")]),
    # A BOM is skipped only before the first line (test_a_bom_before_the_first_line...).
    (
        "utf8_bom_on_a_later_line",
        [line_of(req(6)), b"\xef\xbb\xbf" + line_of(req(7))],
        [answer(6), parse_error(b"\xef\xbb\xbf" + line_of(req(7)))],
    ),
    ("single_quotes", [b"{'jsonrpc':'2.0'}"], [parse_error(b"{'jsonrpc':'2.0'}")]),
    # -- framing --------------------------------------------------------------
    ("crlf", [line_of(req(7, "crlf")) + b"\r\n"], [answer(7, "crlf")]),
    ("empty_lines", [b"", b"\r", b"", b"\r\n"], []),
    ("whitespace_lines", [b"   ", b"\t", b" \r"], []),
    ("whitespace_around_message", [b"  " + line_of(req(7)) + b"\t "], [answer(7)]),
    ("bare_cr_inside", [b"{\r}"], [INVALID]),  # \r is JSON whitespace: {} is call-shaped, invalid
    # -- not an object ----------------------------------------------------------
    ("empty_batch", [b"[]"], [INVALID]),
    ("all_invalid_batch", [b"[1,2,3]"], [[INVALID, INVALID, INVALID]]),
    (
        "mixed_batch",
        [
            line_of(
                [
                    req(8, "in batch"),
                    1,
                    notification("some/notification"),
                    {"jsonrpc": "2.0", "id": 424242, "result": 1},  # unknown id: dropped
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "result": 1,
                        "error": {},
                    },  # response-shaped: dropped
                    {"foo": 1},
                    req(9, "also in batch"),
                ]
            )
        ],
        [[answer(8, "in batch"), INVALID, INVALID, answer(9, "also in batch")]],
    ),
    ("notification_only_batch", [line_of([notification("a"), notification("b")])], []),
    ("nested_batch", [line_of([[req(8)]])], [[INVALID]]),
    (
        "duplicate_ids_in_batch",
        [line_of([req(8, "one"), req(8, "two")])],
        [[answer(8, "one"), answer(8, "two")]],
    ),
    ("number", [b"17"], [INVALID]),
    ("negative_float", [b"-1.5"], [INVALID]),
    ("string", [b'"text"'], [INVALID]),
    ("true", [b"true"], [INVALID]),
    ("false", [b"false"], [INVALID]),
    ("null", [b"null"], [INVALID]),
    # -- envelope ---------------------------------------------------------------
    ("empty_object", [b"{}"], [INVALID]),
    ("jsonrpc_1_0", [line_of(req(7, jsonrpc="1.0"))], [INVALID]),
    (
        "jsonrpc_missing",
        [line_of({"id": 7, "method": SIMPLE, "params": {"message": "x"}})],
        [INVALID],
    ),
    ("jsonrpc_number", [line_of(req(7, jsonrpc=2.0))], [INVALID]),
    ("method_not_string", [line_of({"jsonrpc": "2.0", "id": 7, "method": 5})], [INVALID]),
    (
        "method_and_result",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "result": 1})],
        [INVALID],
    ),
    (
        "method_and_error",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "error": {}})],
        [INVALID],
    ),
    (
        "notification_with_error",
        [line_of({"jsonrpc": "2.0", "method": "n", "error": {}})],
        [INVALID],
    ),
    (
        "result_and_error",
        [line_of({"jsonrpc": "2.0", "id": 7, "result": 1, "error": {"code": 1, "message": "m"}})],
        [],
    ),
    ("id_without_anything", [line_of({"jsonrpc": "2.0", "id": 7})], [INVALID]),
    (
        "duplicate_keys_last_wins",
        [b'{"jsonrpc":"2.0","id":1,"id":2,"method":"simple_method","params":{"message":"hi"}}'],
        [answer(2)],
    ),
    # -- ids ------------------------------------------------------------------------
    ("id_float", [line_of(req(1.5))], [INVALID]),
    (
        "id_float_integral",
        [b'{"jsonrpc":"2.0","id":1.0,"method":"simple_method","params":{"message":"hi"}}'],
        [INVALID],
    ),
    (
        "id_exponent",
        [b'{"jsonrpc":"2.0","id":1e2,"method":"simple_method","params":{"message":"hi"}}'],
        [INVALID],
    ),
    ("id_true", [line_of(req(True))], [INVALID]),
    ("id_object", [line_of(req({"a": 1}))], [INVALID]),
    ("id_array", [line_of(req([1]))], [INVALID]),
    ("id_over_int64", [line_of(req(2**63))], [INVALID]),
    ("id_int64_max", [line_of(req(2**63 - 1))], [answer(2**63 - 1)]),
    ("id_int64_min", [line_of(req(-(2**63)))], [answer(-(2**63))]),
    ("id_null_is_a_request", [line_of(req(None))], [answer(None)]),
    ("id_string_digits", [line_of(req("7"))], [answer("7")]),
    ("id_long_string", [line_of(req("i" * 10000))], [answer("i" * 10000)]),
    ("id_lone_surrogate", [SURROGATE_ID], [parse_error(SURROGATE_ID, LONE_SURROGATE)]),
    (
        "id_out_of_range",
        [b'{"jsonrpc":"2.0","id":1e400,"method":"m"}'],
        [parse_error(b'{"jsonrpc":"2.0","id":1e400,"method":"m"}', OUT_OF_RANGE)],
    ),
    (
        "duplicate_ids",
        [line_of(req(5, "one")), line_of(req(5, "two"))],
        [answer(5, "one"), answer(5, "two")],
    ),
    # -- params ------------------------------------------------------------------------
    (
        "params_number",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "params": 1})],
        [INVALID],
    ),
    (
        "params_string",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "params": "s"})],
        [INVALID],
    ),
    (
        "params_bool",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": SIMPLE, "params": True})],
        [INVALID],
    ),
    ("params_scalar_notification", [line_of(notification("n", 3))], [INVALID]),
    (
        "params_null_is_no_params",
        [line_of({"jsonrpc": "2.0", "id": 7, "method": "no/such", "params": None})],
        [error(7, -32601, "Method not found", "no/such")],
    ),
    (
        "params_out_of_range_typed",
        [NUMBER_RANGE_PARAMS],
        [
            error(
                6,
                -32602,
                "Invalid params",
                {"error": "Number out of range - at `$[...]`", "phase": "deserialization"},
            )
        ],
    ),
    (
        "params_wrong_type_typed",
        [line_of(new_session(6, {"cwd": 5, "mcpServers": []}))],
        [
            error(
                6,
                -32602,
                "Invalid params",
                {
                    "error": "Expected `str`, got `int` - at `$.cwd`",
                    "phase": "deserialization",
                    "json": {"cwd": 5, "mcpServers": []},
                },
            )
        ],
    ),
    (
        "params_missing_typed",
        [line_of({"jsonrpc": "2.0", "id": 6, "method": "session/new"})],
        [
            error(
                6,
                -32602,
                "Invalid params",
                {
                    "error": "Object missing required field `cwd` - at `$`",
                    "phase": "deserialization",
                },
            )
        ],
    ),
    (
        "meta_does_not_shadow_params",
        [
            line_of(
                new_session(
                    6,
                    {
                        "cwd": "/real",
                        "mcpServers": [],
                        "_meta": {"cwd": "/from-meta", "mcpServers": 1},
                    },
                )
            )
        ],
        [
            {
                "jsonrpc": "2.0",
                "id": 6,
                "result": {"sessionId": "/real", "_meta": {"cwd": "/from-meta", "mcpServers": 1}},
            }
        ],
    ),
    ("deep_nesting_in_params", [DEEP], [parse_error(DEEP, TOO_DEEP)]),
    ("deep_nesting_batch", [DEEP_BATCH], [parse_error(DEEP_BATCH, TOO_DEEP)]),
    ("number_out_of_range_batch", [b"[1e400]"], [parse_error(b"[1e400]", OUT_OF_RANGE)]),
    ("number_out_of_range_scalar", [b"1e400"], [parse_error(b"1e400", OUT_OF_RANGE)]),
    # -- UTF-8 -------------------------------------------------------------------------
    ("utf8_invalid_in_method", [UTF8_IN_METHOD], [parse_error(UTF8_IN_METHOD)]),
    ("utf8_invalid_alone", [b"\x80"], [parse_error(b"\x80")]),
    ("utf8_overlong", [OVERLONG], [parse_error(OVERLONG)]),
    (
        "utf8_invalid_in_params_typed",
        [UTF8_IN_PARAMS],
        [
            error(
                4,
                -32602,
                "Invalid params",
                {"error": "Invalid UTF-8 encoded string", "phase": "deserialization"},
            )
        ],
    ),
    ("utf8_valid_non_ascii", [line_of(req(7, "héllo ✓ 𝄞"))], [answer(7, "héllo ✓ 𝄞")]),
    (
        "utf8_surrogate_pair_escape",
        [
            b'{"jsonrpc":"2.0","id":7,"method":"simple_method","params":{"message":"\\ud834\\udd1e"}}'
        ],
        [answer(7, "𝄞")],
    ),
    # -- responses nobody waits for ----------------------------------------------------------
    ("response_unknown_id", [line_of({"jsonrpc": "2.0", "id": 999, "result": {}})], []),
    (
        "error_response_unknown_id",
        [line_of({"jsonrpc": "2.0", "id": 999, "error": {"code": 1, "message": "m"}})],
        [],
    ),
    ("response_string_id", [line_of({"jsonrpc": "2.0", "id": "abc", "result": None})], []),
    ("response_null_id", [line_of({"jsonrpc": "2.0", "id": None, "result": None})], []),
    ("response_float_id", [line_of({"jsonrpc": "2.0", "id": 1.5, "result": None})], []),
    ("response_malformed_error", [line_of({"jsonrpc": "2.0", "id": 999, "error": "boom"})], []),
    # -- notifications ----------------------------------------------------------------------------
    ("unknown_notification", [line_of(notification("no/such", {}))], []),
    ("cancel_unknown_id", [line_of(notification("$/cancel_request", {"requestId": "nobody"}))], []),
    ("cancel_malformed", [line_of(notification("$/cancel_request", {"requestId": True}))], []),
    ("cancel_no_params", [line_of(notification("$/cancel_request"))], []),
    (
        "cancel_as_request",
        [
            line_of(
                {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "$/cancel_request",
                    "params": {"requestId": 1},
                }
            )
        ],
        [error(7, -32601, "Method not found", "$/cancel_request")],
    ),
    # -- over the size cap ----------------------------------------------------------------------
    ("oversized_request", [BIG_REQUEST], [too_large(11, len(BIG_REQUEST))]),
    ("oversized_notification", [BIG_NOTIFICATION], [too_large(None, len(BIG_NOTIFICATION))]),
    ("oversized_id_after_payload", [BIG_ID_LATE], [too_large(12, len(BIG_ID_LATE))]),
    (
        "oversized_string_id_after_payload_then_jsonrpc",
        [BIG_STRING_ID_LATE],
        [too_large("late", len(BIG_STRING_ID_LATE))],
    ),
    ("oversized_nested_id_only", [BIG_NESTED_ID], [too_large(None, len(BIG_NESTED_ID))]),
    ("oversized_escaped_quote_id", [BIG_ESCAPED_ID], [too_large(None, len(BIG_ESCAPED_ID))]),
    ("oversized_batch", [b"[" + BIG_REQUEST + b"]"], [too_large(None, len(BIG_REQUEST) + 2)]),
    ("oversized_not_json", [b"x" * (CAP + 1)], [too_large(None, CAP + 1)]),
    ("oversized_huge_int_id", [BIG_HEAD_ID], [too_large(None, len(BIG_HEAD_ID))]),
    ("oversized_surrogate_id", [BIG_SURROGATE_ID], [too_large(None, len(BIG_SURROGATE_ID))]),
    ("oversized_id_cut_inside_a_number", [BIG_ID_CUT], [too_large(None, len(BIG_ID_CUT))]),
    (
        "oversized_response_object_id",
        [line_of({"id": [1], "jsonrpc": "2.0", "error": {"code": 1, "message": "e" * CAP}})],
        [],
    ),
    (
        "oversized_response_unknown_id",
        [line_of({"jsonrpc": "2.0", "id": 999, "result": "r" * (CAP + 1)})],
        [],
    ),
]


async def on_new_session(
    request: v1.NewSessionRequest, responder: acp.Responder[Any], cx: Any
) -> None:
    # What the handler saw: cwd from the params, _meta as its own field.
    responder.respond(v1.NewSessionResponse(session_id=request.cwd, meta=request.meta))


def server() -> acp.Builder[Any]:
    return (
        acp.UntypedRole.builder()
        .name("corpus")
        .max_message_size(CAP)
        .on_receive_request(on_new_session, v1.NewSessionRequest)
        .on_receive_request(echo, SIMPLE)
    )


async def replies_until_answer(peer: RawPeer, label: str) -> list[Any]:
    """Ask a request labelled ``label``; return what came before its answer."""
    peer.send(req(f"after-{label}", label))
    seen = []
    while True:
        message = await peer.receive()
        if message == answer(f"after-{label}", label):
            return seen
        seen.append(message)


def send_lines(peer: RawPeer, lines: list[bytes]) -> None:
    # Each line with its own newline, written at once: one read may carry
    # the whole case, so the connection handles them back to back.
    peer.channel.write(b"".join(line + b"\n" for line in lines))


@pytest.mark.parametrize(("lines", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_malformed_line_gets_its_exact_reply(lines: list[bytes], expected: list[Any]):
    async with serving(server()) as peer:
        send_lines(peer, lines)
        assert await replies_until_answer(peer, "alive") == expected


async def test_the_whole_corpus_through_one_connection():
    """Every case in turn on one connection, then a final request."""
    async with serving(server()) as peer:
        for name, lines, expected in CASES:
            send_lines(peer, lines)
            assert await replies_until_answer(peer, name) == expected, name
        assert await replies_until_answer(peer, "end") == []


async def test_the_whole_corpus_in_one_write_byte_by_byte_boundaries():
    """The corpus as one stream, split at awkward points: the same replies."""
    stream = b"".join(b"".join(line + b"\n" for line in lines) for _, lines, _ in CASES)
    expected = [reply for _, _, replies in CASES for reply in replies]
    async with serving(server()) as peer:
        # Uneven chunks so lines, CRLFs and UTF-8 sequences straddle reads.
        position, step = 0, 1
        while position < len(stream):
            peer.channel.write(stream[position : position + step])
            position += step
            step = step * 7 % 9973 + 1
        assert await replies_until_answer(peer, "end") == expected


async def test_unterminated_last_line_at_eof_is_still_answered():
    """A final line without its newline is handled at EOF (§1.4)."""
    async with serving(server()) as peer:
        peer.channel.write(line_of(req(7, "last")))
        await peer.close_output()
        with anyio.fail_after(TIMEOUT):
            assert await peer.receive() == answer(7, "last")
        await peer.receive_eof()


# --- malformed answers to our own requests ----------------------------------------
#
# The connection sent request N; the peer answers it with something odd.
# Outcome "pending": the odd line settled nothing, so the good answer sent
# after it is what the awaiter gets. Otherwise the awaiter gets that error.

GOOD = "good answer"


def _deserialization(error_text: str) -> dict[str, Any]:
    return {"error": error_text, "phase": "deserialization", "method": "m"}


def _raw(template: bytes) -> Any:
    return lambda n: template.replace(b"N", str(n).encode())


RESPONSE_CASES: list[tuple[str, Any, list[Any], Any]] = [
    # (name, line for id n, replies cx writes, outcome)
    ("string_id", lambda n: line_of({"jsonrpc": "2.0", "id": str(n), "result": 1}), [], "pending"),
    ("float_id", _raw(b'{"jsonrpc":"2.0","id":N.0,"result":1}'), [], "pending"),
    ("bool_id", lambda n: line_of({"jsonrpc": "2.0", "id": True, "result": 1}), [], "pending"),
    ("no_jsonrpc", lambda n: line_of({"id": n, "result": 1}), [], "pending"),
    (
        "result_and_error",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "result": 1, "error": {}}),
        [],
        "pending",
    ),
    (
        "in_a_batch",
        lambda n: line_of([{"jsonrpc": "2.0", "id": n, "result": "batched"}]),
        [],
        ("ok", "batched"),
    ),
    (
        "null_result",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "result": None}),
        [],
        ("ok", None),
    ),
    (
        "result_out_of_range",
        _raw(b'{"jsonrpc":"2.0","id":N,"result":[1e400]}'),
        [],
        ("error", -32700, "Parse error", _deserialization("Number out of range - at `$[0]`")),
    ),
    (
        "result_invalid_utf8",
        _raw(b'{"jsonrpc":"2.0","id":N,"result":"\xff"}'),
        [],
        ("error", -32700, "Parse error", _deserialization("Invalid UTF-8 encoded string")),
    ),
    (
        "result_too_deep",
        _raw(b'{"jsonrpc":"2.0","id":N,"result":' + b"[" * 20000 + b"]" * 20000 + b"}"),
        [f"parse_error: {TOO_DEEP}"],
        "pending",
    ),
    (
        "error_code_out_of_range",
        _raw(b'{"jsonrpc":"2.0","id":N,"error":{"code":1e400,"message":"m"}}'),
        [f"parse_error: {OUT_OF_RANGE}"],
        "pending",
    ),
    (
        "error_not_an_object",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "error": "boom"}),
        [],
        ("error", -32603, "Internal error", {"reason": "malformed_error_object", "error": "boom"}),
    ),
    (
        "error_without_message",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "error": {"code": -1}}),
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "malformed_error_object", "error": {"code": -1}},
        ),
    ),
    (
        "error_code_float",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "error": {"code": 1.5, "message": "m"}}),
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "malformed_error_object", "error": {"code": 1.5, "message": "m"}},
        ),
    ),
    (
        "error_kept_as_sent",
        lambda n: line_of(
            {
                "jsonrpc": "2.0",
                "id": n,
                "error": {"code": 7, "message": "odd", "data": [None, {"x": 1}]},
            }
        ),
        [],
        ("error", 7, "odd", [None, {"x": 1}]),
    ),
    (
        "oversized_result",
        lambda n: line_of({"jsonrpc": "2.0", "id": n, "result": "r" * (CAP + 1)}),
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "message_too_large", "size": "SIZE", "limit": CAP, "method": "m"},
        ),
    ),
    (
        "oversized_result_id_after_payload",
        lambda n: b'{"jsonrpc":"2.0","result":"' + b"r" * (CAP + 1) + b'","id":%d}' % n,
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "message_too_large", "size": "SIZE", "limit": CAP, "method": "m"},
        ),
    ),
    (
        "oversized_result_id_between_two_payloads",
        lambda n: (
            b'{"jsonrpc":"2.0","result":{"text":"'
            + b"r" * (CAP + 1)
            + b'"},"id":%d,"_meta":{"trace":"' % n
            + b"m" * (CAP + 1)
            + b'"}}'
        ),
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "message_too_large", "size": "SIZE", "limit": CAP, "method": "m"},
        ),
    ),
    (
        "oversized_error",
        lambda n: line_of(
            {"jsonrpc": "2.0", "id": n, "error": {"code": 1, "message": "e" * (CAP + 1)}}
        ),
        [],
        (
            "error",
            -32603,
            "Internal error",
            {"reason": "message_too_large", "size": "SIZE", "limit": CAP, "method": "m"},
        ),
    ),
    (
        "answered_twice",
        lambda n: (
            line_of({"jsonrpc": "2.0", "id": n, "result": "first"})
            + b"\n"
            + line_of({"jsonrpc": "2.0", "id": n, "result": "second"})
        ),
        [],
        ("ok", "first"),
    ),
]


def _client(with_dispatch_handler: bool) -> acp.Builder[Any]:
    builder = (
        acp.UntypedRole.builder()
        .name("asker")
        .max_message_size(CAP)
        .on_receive_request(echo, SIMPLE)
    )
    if with_dispatch_handler:
        # Responses then pass a handler first (a separate decoding path).
        async def decline(dispatch: Any, cx: Any) -> Any:
            return acp.NOT_HANDLED

        builder = builder.on_receive_dispatch(decline)
    return builder


@pytest.mark.parametrize("with_dispatch_handler", [False, True], ids=["plain", "dispatch-handler"])
@pytest.mark.parametrize(
    ("make_line", "replies", "outcome"),
    [c[1:] for c in RESPONSE_CASES],
    ids=[c[0] for c in RESPONSE_CASES],
)
async def test_malformed_answer_to_our_request(make_line, replies, outcome, with_dispatch_handler):
    from tests.rpc.wire import barrier_from_peer, facing_raw_peer

    async with facing_raw_peer(_client(with_dispatch_handler)) as (cx, peer, log):
        sent = cx.send_request(acp.UntypedMessage("m", {}))
        request = await log.next()
        line = make_line(request["id"])
        peer.channel.write(line + b"\n")
        seen = await barrier_from_peer(log, "after-answer")
        assert [_as_parse_error(m, line) for m in seen] == replies
        if outcome == "pending":
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": GOOD})
            outcome = ("ok", GOOD)
        with anyio.fail_after(TIMEOUT):
            if outcome[0] == "ok":
                assert await sent == outcome[1]
            else:
                with pytest.raises(acp.Error) as caught:
                    await sent
                code, message, data = outcome[1:]
                if isinstance(data, dict) and data.get("size") == "SIZE":
                    data = {**data, "size": len(line)}
                assert (caught.value.code, caught.value.message, caught.value.data) == (
                    code,
                    message,
                    data,
                )
        # Still alive: a round trip in each direction.
        await barrier_from_peer(log, "still-alive")
        later = cx.send_request(acp.UntypedMessage("m", {}))
        peer.send({"jsonrpc": "2.0", "id": (await log.next())["id"], "result": "later"})
        with anyio.fail_after(TIMEOUT):
            assert await later == "later"
        assert cx._table.outgoing_count == 0


BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("step", [1, 2, 3, 1000])
async def test_a_bom_before_the_first_line_is_skipped(step: int):
    """docs/semantics.md §1.4, whatever the reads the BOM is split across."""
    data = BOM + line_of(req(7, "first")) + b"\n"
    async with serving(server()) as peer:
        for start in range(0, len(data), step):
            peer.channel.write(data[start : start + step])
        with anyio.fail_after(TIMEOUT):
            assert await peer.receive() == answer(7, "first")
        assert await replies_until_answer(peer, "alive") == []


async def test_a_lone_bom_prefix_at_eof_is_a_parse_error():
    async with serving(server()) as peer:
        peer.channel.write(BOM[:2])
        await peer.close_output()
        with anyio.fail_after(TIMEOUT):
            assert await peer.receive() == parse_error(BOM[:2])
        await peer.receive_eof()


async def test_repeated_warnings_are_rate_limited(caplog):
    """10,000 answers to ids never sent and 10,000 malformed cancels: a few
    log lines, not one per message (docs/semantics.md §1.4)."""
    unknown = b"".join(
        line_of({"jsonrpc": "2.0", "id": 100_000 + n, "result": None}) + b"\n"
        for n in range(10_000)
    )
    cancels = line_of(notification("$/cancel_request", {"requestId": True})) + b"\n"
    async with serving(server()) as peer:
        peer.channel.write(unknown + cancels * 10_000)
        assert await replies_until_answer(peer, "after-flood") == []
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) <= 2 * (10 + 4), len(warnings)
    assert any("(10000 times so far)" in w and "unknown id" in w for w in warnings)
    assert any("(10000 times so far)" in w and "$/cancel_request" in w for w in warnings)
