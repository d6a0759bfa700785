"""The public codec: fast path, errors, conversions."""

from __future__ import annotations

import json

import msgspec
import pytest

from acp_fast.schema import (
    SchemaError,
    UnknownVariant,
    _lenient,
    convert,
    decode,
    decoder,
    encode,
    v1,
    v2,
)

CHUNK = (
    b'{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk",'
    b'"content":{"type":"text","text":"Hello"}}}'
)


def test_valid_messages_never_take_the_lenient_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise AssertionError("lenient path used")

    monkeypatch.setattr(_lenient, "convert", fail)
    value = decode(v1.SessionNotification, CHUNK)
    assert value.update.content == v1.ContentBlockText(text="Hello")
    assert decode(v1.SessionNotification, memoryview(CHUNK)) == value
    assert decode(v1.SessionNotification, bytearray(CHUNK)) == value
    assert convert(v1.SessionNotification, json.loads(CHUNK)) == value


def test_encode_writes_only_what_was_set() -> None:
    req = v1.InitializeRequest(protocol_version=1, client_info=None)
    assert encode(req) == b'{"protocolVersion":1,"clientInfo":null}'
    assert decode(v1.InitializeRequest, encode(req)) == req
    assert repr(req) == "InitializeRequest(protocol_version=1, client_info=None)"


def test_decoders_are_cached() -> None:
    assert decoder(v2.PromptRequest) is decoder(v2.PromptRequest)


def test_schema_error_is_a_validation_error_with_a_path() -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode(v1.PromptRequest, b'{"sessionId": "s", "prompt": [{"type": "text"}]}')
    err = info.value
    assert isinstance(err, SchemaError)
    assert err.path == "$.prompt[0]"
    assert str(err) == "Object missing required field `text` - at `$.prompt[0]`"


def test_errors_never_echo_large_inputs() -> None:
    huge = "x" * 1_000_000
    raw = json.dumps({"sessionId": "s", "update": {"sessionUpdate": huge}}).encode()
    with pytest.raises(SchemaError) as info:
        decode(v1.SessionNotification, raw)
    assert len(str(info.value)) < 300
    raw = json.dumps(
        {"sessionId": "s", "prompt": [{"type": "text", "text": 5}], "pad": huge}
    ).encode()
    with pytest.raises(SchemaError) as info:
        decode(v1.PromptRequest, raw)
    assert str(info.value) == "Expected `str`, got `int` - at `$.prompt[0].text`"


def test_invalid_json_is_a_decode_error_not_a_schema_error() -> None:
    with pytest.raises(msgspec.DecodeError) as info:
        decode(v1.PromptRequest, b'{"sessionId": ')
    assert not isinstance(info.value, msgspec.ValidationError)


def test_wrong_top_level_kind() -> None:
    with pytest.raises(SchemaError, match=r"Expected `object`, got `array` - at `\$`"):
        decode(v1.CancelNotification, b"[]")


def test_object_union_errors() -> None:
    # EmbeddedResourceResource: text or blob contents, no tag.
    raw = b'{"sessionId": "s", "prompt": [{"type": "resource", "resource": {"uri": "u"}}]}'
    with pytest.raises(SchemaError) as info:
        decode(v1.PromptRequest, raw)
    assert info.value.path == "$.prompt[0].resource"
    assert "TextResourceContents" in str(info.value) and "BlobResourceContents" in str(info.value)


def test_object_union_members() -> None:
    # v1 McpServer: tagged http/sse, untagged stdio; mcpServers skips invalid items.
    raw = (
        b'{"cwd": "/", "mcpServers": [{"name": "x"},'
        b' {"name": "s", "command": "c", "args": [], "env": []},'
        b' {"type": "http", "name": "h", "url": "u", "headers": []}]}'
    )
    value = decode(v1.NewSessionRequest, raw)
    assert value.mcp_servers == [
        v1.McpServerStdio(name="s", command="c", args=[], env=[]),
        v1.McpServerHttp(name="h", url="u", headers=[]),
    ]
    assert all(isinstance(server, v1.McpServer) for server in value.mcp_servers)
    assert json.loads(encode(value.mcp_servers[1]))["type"] == "http"


def test_unknown_variant_api() -> None:
    unknown = UnknownVariant({"type": "_x", "a": 1}, "type")
    assert unknown.tag == "_x"
    assert unknown == {"type": "_x", "a": 1}
    assert repr(unknown) == "UnknownVariant({'type': '_x', 'a': 1}, tag_field='type')"
    assert UnknownVariant({"a": 1}).tag is None
    assert msgspec.json.encode(unknown) == encode(unknown) == b'{"type":"_x","a":1}'


def test_convert_rejects_what_decode_rejects() -> None:
    with pytest.raises(SchemaError, match=r"`sessionId`"):
        convert(v1.CancelNotification, {})
