"""v2 forward compatibility: open unions and open enums keep what they do not know."""

from __future__ import annotations

import json
import typing

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fast.schema import SchemaError, UnknownVariant, convert, decode, encode, v2, v2_unstable

# The tags of the known SessionUpdate variants (the alias is Annotated[Union[...], ...]).
KNOWN_UPDATES = frozenset(
    cls.__struct_config__.tag for cls in typing.get_args(typing.get_args(v2.SessionUpdate)[0])
)


def update(body: dict[str, object]) -> bytes:
    return json.dumps({"sessionId": "s", "update": body}).encode()


def roundtrip(tp: object, raw: bytes) -> object:
    value = decode(tp, raw)
    assert json.loads(encode(value)) == json.loads(raw)
    return value


@pytest.mark.parametrize("tag", ["_acme_progress", "checkpoint_created"])
def test_unknown_session_update_round_trips(tag: str) -> None:
    raw = update({"sessionUpdate": tag, "percent": 40, "detail": {"nested": [1, None, 2.5]}})
    value = roundtrip(v2.UpdateSessionNotification, raw)
    assert isinstance(value.update, UnknownVariant)
    assert value.update.tag == tag
    assert value.update.tag_field == "sessionUpdate"
    assert value.update["detail"] == {"nested": [1, None, 2.5]}


def test_unknown_content_block_inside_a_known_variant() -> None:
    raw = update(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m",
            "content": {"type": "_acme_math", "tex": "x^2"},
        }
    )
    value = roundtrip(v2.UpdateSessionNotification, raw)
    assert isinstance(value.update, v2.SessionUpdateAgentMessageChunk)
    assert value.update.content == UnknownVariant({"type": "_acme_math", "tex": "x^2"}, "type")


def test_unknown_variants_deep_in_lists() -> None:
    raw = update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "content": [
                {
                    "type": "diff",
                    "changes": [{"operation": "_acme_chmod", "path": "/a", "mode": "0755"}],
                },
                {"type": "_acme_chart", "points": [[0, 1]]},
                {"type": "content", "content": {"type": "_acme_video", "src": "v.mp4"}},
            ],
        }
    )
    value = roundtrip(v2.UpdateSessionNotification, raw)
    content = value.update.content
    assert isinstance(content[0], v2.ToolCallContentDiff)
    assert isinstance(content[0].changes[0], UnknownVariant)
    assert isinstance(content[1], UnknownVariant)
    assert isinstance(content[2].content, UnknownVariant)


def test_known_variant_missing_a_required_field_is_rejected() -> None:
    raw = update(
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text"}}
    )
    with pytest.raises(SchemaError) as info:
        decode(v2.UpdateSessionNotification, raw)
    assert info.value.path == "$.update.content"
    assert "missing required field `text`" in str(info.value)
    # A known update missing its own required field is not demoted to unknown either.
    with pytest.raises(SchemaError, match="`messageId`"):
        decode(
            v2.UpdateSessionNotification,
            update(
                {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
            ),
        )


def test_known_variant_with_a_wrongly_typed_field_is_rejected() -> None:
    raw = update({"sessionUpdate": "usage_update", "used": "lots", "size": 10})
    with pytest.raises(SchemaError, match=r"Expected `int`, got `str` - at `\$\.update\.used`"):
        decode(v2.UpdateSessionNotification, raw)


def test_unknown_variant_must_match_the_catch_all_branch() -> None:
    # v2 AuthMethod's catch-all requires `methodId` and `name`.
    base = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}
    ok = {**base, "authMethods": [{"type": "_sso", "methodId": "m", "name": "SSO", "x": 1}]}
    value = roundtrip(v2.InitializeResponse, json.dumps(ok).encode())
    assert isinstance(value.auth_methods[0], UnknownVariant)
    # authMethods skips invalid items: the one lacking `methodId` is dropped...
    bad = {
        **base,
        "authMethods": [
            {"type": "_sso", "name": "SSO"},
            {"type": "agent", "methodId": "a", "name": "A"},
        ],
    }
    kept = decode(v2.InitializeResponse, json.dumps(bad).encode())
    assert kept.auth_methods == [v2.AuthMethodAgent(method_id="a", name="A")]
    # ...while where nothing is lenient the message is rejected (PlanUpdateContent's
    # catch-all requires `planId`).
    plan = update({"sessionUpdate": "plan_update", "plan": {"type": "_acme_board"}})
    with pytest.raises(SchemaError, match=r"`planId` - at `\$\.update\.plan`"):
        decode(v2.UpdateSessionNotification, plan)
    board = update({"sessionUpdate": "plan_update", "plan": {"type": "_acme_board", "planId": "p"}})
    assert isinstance(roundtrip(v2.UpdateSessionNotification, board).update.plan, UnknownVariant)


def test_tag_must_be_a_string() -> None:
    with pytest.raises(SchemaError, match=r"- at `\$\.update\.sessionUpdate`"):
        decode(v2.UpdateSessionNotification, update({"sessionUpdate": 5}))


def test_unknown_state_of_state_update() -> None:
    raw = update({"sessionUpdate": "state_update", "state": "_acme_paused", "until": "later"})
    value = roundtrip(v2.UpdateSessionNotification, raw)
    assert isinstance(value.update, UnknownVariant)
    known = roundtrip(
        v2.UpdateSessionNotification,
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "refusal"}),
    )
    assert known.update == v2.SessionUpdateStateUpdate(state="idle", stop_reason="refusal")


def test_unknown_enum_values_are_kept() -> None:
    raw = update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c",
            "kind": "_acme_deploy",
            "status": "queued",
            "content": [
                {
                    "type": "diff",
                    "changes": [{"operation": "add", "path": "/a", "fileType": "socket"}],
                }
            ],
        }
    )
    value = roundtrip(v2.UpdateSessionNotification, raw)
    assert value.update.kind == "_acme_deploy"
    assert value.update.status == "queued"
    stop = roundtrip(
        v2.UpdateSessionNotification,
        update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "_acme_quota"}),
    )
    assert stop.update.stop_reason == "_acme_quota"


def test_open_union_method_payload() -> None:
    raw = b'{"sessionId": "s", "configId": "t", "type": "_acme_number", "value": 0.5}'
    value = roundtrip(v2.SetSessionConfigOptionRequest, raw)
    assert isinstance(value, UnknownVariant)
    # The catch-all branch still requires `value` and the shared fields.
    with pytest.raises(SchemaError, match="`value`"):
        decode(
            v2.SetSessionConfigOptionRequest, b'{"sessionId": "s", "configId": "t", "type": "_x"}'
        )
    known = decode(
        v2.SetSessionConfigOptionRequest,
        b'{"sessionId": "s", "configId": "t", "type": "boolean", "value": true}',
    )
    assert known == v2.SetSessionConfigOptionRequestBoolean(
        session_id="s", config_id="t", value=True
    )


def test_unknown_variant_of_an_object_union_with_untagged_members() -> None:
    # MultiSelectItems: tagged `string`, untagged `anyOf` list, and a catch-all.
    schema = {"items": {"type": "_acme_tree", "roots": []}}
    value = convert(v2.MultiSelectPropertySchema, schema)
    assert isinstance(value.items, UnknownVariant)
    assert msgspec.to_builtins(value) == schema
    titled = convert(
        v2.MultiSelectPropertySchema, {"items": {"anyOf": [{"const": "a", "title": "A"}]}}
    )
    assert isinstance(titled.items, v2.TitledMultiSelectItems)


def test_sending_a_custom_variant() -> None:
    custom = UnknownVariant({"sessionUpdate": "_acme_progress", "percent": 40}, "sessionUpdate")
    note = v2.UpdateSessionNotification(session_id="s", update=custom)
    assert json.loads(encode(note)) == {
        "sessionId": "s",
        "update": {"sessionUpdate": "_acme_progress", "percent": 40},
    }


def test_unstable_variants_are_unknown_to_the_stable_module() -> None:
    raw = update({"sessionUpdate": "notice", "severity": "info", "title": "hi"})
    assert isinstance(decode(v2.UpdateSessionNotification, raw).update, UnknownVariant)
    assert isinstance(
        decode(v2_unstable.UpdateSessionNotification, raw).update, v2_unstable.SessionUpdateNotice
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    tag=st.text(min_size=1, max_size=12).filter(lambda t: t not in KNOWN_UPDATES),
    extra=st.dictionaries(
        st.text(max_size=8).filter(lambda k: k != "sessionUpdate"), _json, max_size=4
    ),
)
def test_any_unknown_update_round_trips(tag: str, extra: dict[str, object]) -> None:
    body = {"sessionUpdate": tag, **extra}
    value = decode(v2.UpdateSessionNotification, update(body))
    assert value.update == UnknownVariant(body, "sessionUpdate")
    assert json.loads(encode(value)) == {"sessionId": "s", "update": body}
