"""``x-deserialize-default-on-error`` and ``x-deserialize-skip-invalid-items``."""

from __future__ import annotations

import json

import msgspec
import pytest

from acp_fast.schema import SchemaError, convert, decode, v1, v2


def dumps(value: object) -> bytes:
    return json.dumps(value).encode()


def test_v1_default_on_error_drops_bad_optional_fields() -> None:
    raw = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "kind": "teleport",  # v1 ToolKind is closed
            "status": 3,
            "title": ["not", "a", "string"],
            "_meta": "not an object",
        },
    }
    value = decode(v1.SessionNotification, dumps(raw))
    update = value.update
    assert update == v1.SessionUpdateToolCallUpdate(tool_call_id="c")
    assert update.kind is msgspec.UNSET and update.status is msgspec.UNSET


def test_v1_field_without_the_annotation_still_fails() -> None:
    # `toolCallId` carries no x-deserialize-default-on-error.
    with pytest.raises(
        SchemaError, match=r"Expected `str`, got `int` - at `\$\.update\.toolCallId`"
    ):
        decode(
            v1.SessionNotification,
            dumps(
                {"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": 1}}
            ),
        )


def test_skip_invalid_items_keeps_the_rest() -> None:
    raw = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "locations": [
                {"path": "/a", "line": 1},
                {"line": 2},
                "nope",
                {"path": "/b", "line": -1},
                {"path": "/c"},
            ],
            "content": [
                {"type": "content", "content": {"type": "text", "text": "ok"}},
                {"type": "diff"},
            ],
        },
    }
    update = decode(v1.SessionNotification, dumps(raw)).update
    # `line` is default-on-error itself: the bad value goes, its item stays.
    assert update.locations == [
        v1.ToolCallLocation(path="/a", line=1),
        v1.ToolCallLocation(path="/b"),
        v1.ToolCallLocation(path="/c"),
    ]
    assert len(update.content) == 1


def test_required_list_falls_back_to_empty() -> None:
    # Plan.entries is required, default-on-error and skip-invalid-items.
    bad_list = decode(
        v1.SessionNotification,
        dumps({"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": "soon"}}),
    )
    assert bad_list.update.entries == []
    some_bad = decode(
        v1.SessionNotification,
        dumps(
            {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "plan",
                    "entries": [
                        {"content": "x", "priority": "high", "status": "pending"},
                        {"content": "y"},
                    ],
                },
            }
        ),
    )
    assert len(some_bad.update.entries) == 1
    with pytest.raises(SchemaError, match="missing required field `entries`"):
        decode(
            v1.SessionNotification, dumps({"sessionId": "s", "update": {"sessionUpdate": "plan"}})
        )


def test_nullable_field_keeps_null() -> None:
    value = decode(
        v2.UpdateSessionNotification,
        dumps(
            {
                "sessionId": "s",
                "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": None},
            }
        ),
    )
    assert value.update.title is None


def test_v2_default_on_error_with_open_unions_in_one_message() -> None:
    raw = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "locations": [{"path": 5}, {"path": "/ok"}],
            "content": [{"type": "_acme"}, {"type": "terminal"}],
            "rawInput": {"anything": True},
        },
    }
    update = decode(v2.UpdateSessionNotification, dumps(raw)).update
    assert [loc.path for loc in update.locations] == ["/ok"]
    assert update.content == [{"type": "_acme"}]  # unknown kept, malformed known dropped
    assert update.raw_input == {"anything": True}


def test_initialize_with_broken_capabilities_still_decodes() -> None:
    raw = {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": "yes", "terminal": "maybe"},
        "clientInfo": 7,
    }
    value = decode(v1.InitializeRequest, dumps(raw))
    assert value == v1.InitializeRequest(
        protocol_version=1, client_capabilities=v1.ClientCapabilities()
    )


def test_convert_applies_the_same_rules() -> None:
    value = convert(
        v1.SessionNotification,
        {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": 3}},
    )
    assert value.update.entries == []
