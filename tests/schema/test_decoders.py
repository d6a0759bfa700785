"""msgspec can build a decoder for every type; the tables and class metadata agree."""

from __future__ import annotations

import inspect
import typing

import msgspec
import pytest

from acp_fast.schema import MethodInfo, ObjectUnion, decoder, encode
from tests.schema.cases import MODULES


def payload_types(module: str) -> list[tuple[str, str, object]]:
    out = []
    for method, info in MODULES[module].METHODS.items():
        for role in ("request", "response", "notification"):
            tp = getattr(info, role)
            if tp is not None:
                out.append((method, role, tp))
    return out


@pytest.mark.parametrize("module", list(MODULES))
def test_every_method_type_builds_a_decoder_and_encodes(module: str) -> None:
    for method, role, tp in payload_types(module):
        dec = decoder(tp)
        assert isinstance(dec, msgspec.json.Decoder), (method, role)
        assert decoder(tp) is dec  # cached
        # Every request/notification params class can be built empty of optional fields
        # and encoded; the sample tests check real payloads.
        if inspect.isclass(tp) and issubclass(tp, msgspec.Struct):
            required = [f for f in msgspec.structs.fields(tp) if f.required]
            if not required:
                assert encode(tp()) == b"{}" or tp.__struct_config__.tag is not None


@pytest.mark.parametrize("module", list(MODULES))
def test_every_generated_class_builds_a_decoder(module: str) -> None:
    mod = MODULES[module]
    count = 0
    for name, value in vars(mod).items():
        if getattr(value, "__module__", None) != mod.__name__ or not inspect.isclass(value):
            continue
        if issubclass(value, msgspec.Struct | ObjectUnion):
            assert isinstance(decoder(value), msgspec.json.Decoder), name
            count += 1
    assert count > 100


@pytest.mark.parametrize("module", list(MODULES))
def test_method_tables_match_class_metadata(module: str) -> None:
    mod = MODULES[module]
    for method, info in mod.METHODS.items():
        assert isinstance(info, MethodInfo)
        assert info.method == method
        for role in ("request", "response", "notification"):
            tp = getattr(info, role)
            if tp is None or tp is typing.Any:
                continue
            assert tp.METHOD == method, (method, role)
            assert tp.SIDE == info.side, (method, role)
        if info.request is not None:
            assert info.request.RESPONSE is info.response
    sides = {
        "agent": mod.AGENT_METHODS,
        "client": mod.CLIENT_METHODS,
        "protocol": mod.PROTOCOL_METHODS,
    }
    for side, table in sides.items():
        for wire in table.values():
            assert mod.METHODS[wire].side in (side, "both")
    listed = {w for table in sides.values() for w in table.values()}
    assert listed == set(mod.METHODS)


def test_v1_method_facts() -> None:
    v1 = MODULES["v1"]
    assert v1.InitializeRequest.METHOD == "initialize"
    assert v1.InitializeRequest.SIDE == "agent"
    assert v1.InitializeRequest.RESPONSE is v1.InitializeResponse
    assert v1.SessionNotification.METHOD == "session/update"
    assert v1.SessionNotification.SIDE == "client"
    assert v1.CancelRequestNotification.METHOD == "$/cancel_request"
    assert v1.CancelRequestNotification.SIDE == "protocol"
    prompt = v1.METHODS["session/prompt"]
    assert (prompt.kind, prompt.params, prompt.result) == (
        "request",
        v1.PromptRequest,
        v1.PromptResponse,
    )
    cancel = v1.METHODS["session/cancel"]
    assert (cancel.kind, cancel.params, cancel.result) == (
        "notification",
        v1.CancelNotification,
        None,
    )
    assert v1.PROTOCOL_VERSION == 1 and v1.SCHEMA_VERSION == "1.21.0"
    assert "mcp/message" not in v1.METHODS


@pytest.mark.parametrize("module", ["v1_unstable", "v2_unstable"])
def test_mcp_message_is_both_request_and_notification(module: str) -> None:
    mod = MODULES[module]
    info = mod.METHODS["mcp/message"]
    assert info.kind == "both"
    assert info.side == "both"
    assert info.request is mod.MessageMcpRequest
    assert info.notification is mod.MessageMcpNotification
    assert info.response is typing.Any  # any JSON value
    assert mod.MessageMcpRequest.RESPONSE is typing.Any
    assert mod.MessageMcpNotification.SIDE == "both"
    assert "mcp_message" in mod.AGENT_METHODS and "mcp_message" in mod.CLIENT_METHODS


def test_union_payloads_carry_metadata_on_every_variant() -> None:
    v2 = MODULES["v2"]
    assert issubclass(v2.CreateElicitationRequest, ObjectUnion)
    assert v2.CreateElicitationRequestForm.METHOD == "elicitation/create"
    assert v2.CreateElicitationRequestUrl.RESPONSE is v2.CreateElicitationResponse
    assert v2.METHODS["elicitation/create"].params is v2.CreateElicitationRequest
    assert isinstance(v2.CreateElicitationResponseAccept(), v2.CreateElicitationResponse)


def test_builtin_shadowing_fields_are_usable() -> None:
    v1 = MODULES["v1"]
    caps = v1.SessionCapabilities(list=v1.SessionListCapabilities())
    assert encode(caps) == b'{"list":{}}'


@pytest.mark.parametrize("module", list(MODULES))
def test_optional_fields_default_to_unset_only(module: str) -> None:
    """Encoding never adds a field the sender did not set: no other defaults exist."""
    mod = MODULES[module]
    for name, value in vars(mod).items():
        if not (inspect.isclass(value) and issubclass(value, msgspec.Struct)):
            continue
        config = value.__struct_config__
        assert config.omit_defaults, name
        for f in msgspec.structs.fields(value):
            assert f.default_factory is msgspec.NODEFAULT, (name, f.name)
            assert f.required or f.default is msgspec.UNSET, (name, f.name)


def test_meta_keeps_its_wire_name() -> None:
    v1 = MODULES["v1"]
    note = v1.CancelNotification(session_id="s", meta={"traceparent": "00-abc"})
    assert encode(note) == b'{"sessionId":"s","_meta":{"traceparent":"00-abc"}}'
