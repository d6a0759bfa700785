"""Message classification (docs/semantics.md §1.1, §1.4) and oversized heads."""

from __future__ import annotations

import pytest

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

OBJ, ARR, NULL = 123, 91, 110


def kind(
    core, jsonrpc="2.0", id=MISSING, method=MISSING, params=PARAMS_ABSENT, result=False, error=False
):
    return core.classify(jsonrpc, id, method, params, result, error)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"id": 1, "method": "m"}, REQUEST),
        ({"id": "abc", "method": "m", "params": OBJ}, REQUEST),
        ({"id": None, "method": "m", "params": ARR}, REQUEST),  # id null is a request
        ({"id": 2**63 - 1, "method": "m"}, REQUEST),
        ({"id": -(2**63), "method": "m"}, REQUEST),
        ({"method": "m"}, NOTIFICATION),
        ({"method": "m", "params": NULL}, NOTIFICATION),
        ({"id": 1, "result": True}, RESULT_RESPONSE),
        ({"id": "x", "error": True}, ERROR_RESPONSE),
        ({"id": None, "error": True}, ERROR_RESPONSE),
    ],
)
def test_valid_messages(core, fields, expected):
    assert kind(core, **fields) == expected


@pytest.mark.parametrize(
    "fields",
    [
        {"id": 1, "method": "m", "params": ord("1")},  # scalar params
        {"id": 1, "method": "m", "params": ord('"')},
        {"id": 1, "method": "m", "result": True},  # method with result
        {"method": "m", "error": True},  # a notification carrying error
        {"id": 1.0, "method": "m"},  # float id
        {"id": True, "method": "m"},  # bool id
        {"id": {"a": 1}, "method": "m"},
        {"id": 2**63, "method": "m"},  # outside int64
        {"id": 1, "method": 5},  # method not a string
        {"id": 1, "method": "m", "jsonrpc": "1.0"},
        {"method": "m", "jsonrpc": MISSING},
        {},  # neither request nor response
        {"id": 1},
    ],
)
def test_invalid_call_shaped(core, fields):
    assert kind(core, **fields) == INVALID_CALL


@pytest.mark.parametrize(
    "fields",
    [
        {"id": 1, "result": True, "error": True},
        {"result": True},  # response without id
        {"error": True},
        {"id": 1.0, "result": True},
        {"id": False, "error": True},
        {"id": 1, "result": True, "jsonrpc": MISSING},
    ],
)
def test_invalid_response_shaped(core, fields):
    assert kind(core, **fields) == INVALID_RESPONSE


def test_ids_never_alias(core):
    assert core.is_valid_id(1) and core.is_valid_id("1") and core.is_valid_id(None)
    assert not core.is_valid_id(1.0)
    assert not core.is_valid_id(True)
    assert not core.is_valid_id(False)
    assert not core.is_valid_id([1])


def test_params_head_of_decoded_values(core):
    assert core.params_head_of({}) == OBJ
    assert core.params_head_of([]) == ARR
    assert core.params_head_of(None) == NULL
    assert core.params_head_of(3) not in (OBJ, ARR, NULL)
    assert core.params_head_of("s") not in (OBJ, ARR, NULL)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (
            b'{"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"content":"xxxx',
            (5, SHAPE_CALL),
        ),
        (b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"', (MISSING, SHAPE_CALL)),
        (b'{"jsonrpc":"2.0","id":"r-1","result":{"content":"aaaa', ("r-1", SHAPE_RESPONSE)),
        (b'{ "id" : 12 , "error" : {"code": -1, "message": "', (12, SHAPE_RESPONSE)),
        (b'{"params":{"a":[1,{"id":9}],"b":"}\\"{"},"id":3,"method":"m","more', (3, SHAPE_CALL)),
        (b'{"jsonrpc":"2.0","id":12', (MISSING, SHAPE_UNKNOWN)),  # the number may continue
        (b'{"id":1.5,"method":"m","params":{', (MISSING, SHAPE_CALL)),
        (b'{"id":true,"method":"m","params":{', (MISSING, SHAPE_CALL)),
        (b'{"id":null,"method":"m","params":{', (None, SHAPE_CALL)),
        (b'[{"id":1,"method":"m"},', (MISSING, SHAPE_UNKNOWN)),
        (b"not json at all", (MISSING, SHAPE_UNKNOWN)),
        (b"", (MISSING, SHAPE_UNKNOWN)),
        (b'{"method":"m","id":"abc\\"', (MISSING, SHAPE_CALL)),
    ],
)
def test_scan_head(core, head, expected):
    assert core.scan_head(head) == expected


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (b'xxxx"},"id":12}', 12),
        (b'xxxx"} , "id" : "r-1" ,"jsonrpc":"2.0" }\r', "r-1"),
        (b'x"},"id":null,"jsonrpc":"2.0"}', None),
        (b'xx"}}, "id": 7, "error": {"code": -1, "message": "a\\"}"}}', 7),
        (b'x":[1,{"id":9}],"b":"}\\"{"}}', MISSING),  # only a nested id
        (b'x","id":9}}', MISSING),  # the id of a nested object
        (b'xx\\",\\"id\\":7"}', MISSING),  # inside a string
        (b'x"},"id":1.5}', MISSING),
        (b'x"},"id":true}', MISSING),
        (b'x"},"id":' + b"1" * 30 + b"}", MISSING),
        (b'"},"id":"\\ud800"}', MISSING),
        (b'{"id":3}', 3),
        (b"12}", MISSING),
        (b"", MISSING),
        (b"not json", MISSING),
    ],
)
def test_scan_tail(core, tail, expected):
    """docs/semantics.md §1.4: an id after the payload of an oversized line."""
    assert core.scan_tail(tail) == expected


def test_the_framer_keeps_the_tail_of_an_oversized_line(core):
    line = b'{"method":"m","params":"' + b"p" * 300 + b'","id":42}'
    for step in (1, 7, 64, len(line) + 1):
        buffer = core.LineBuffer(max_line=100, head_size=32)
        out = []
        data = line + b"\n"
        for start in range(0, len(data), step):
            out.extend(buffer.feed(data[start : start + step]))
        assert len(out) == 1
        assert out[0].tail == line[-32:], step
        assert core.scan_tail(out[0].tail) == 42
    buffer = core.LineBuffer(max_line=100, head_size=32)
    buffer.feed(line)
    assert buffer.close().tail == line[-32:]
