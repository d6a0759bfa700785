"""The official SDK's public names (``acp``, ``acp.schema``) that compat
provides, read from the installed official package, and the ones it does not,
each with its reason (docs/migration.md)."""

from __future__ import annotations

import enum
import typing
from typing import Any

import acp
import acp.schema
import pydantic
import pytest

import acp_fast.compat
import acp_fast.compat.schema as compat_schema

# acp.schema names compat does not provide.
SCHEMA_NOT_COVERED = {
    # JSON-RPC envelopes: acp_fast's connection layer frames messages itself.
    "AgentErrorMessage",
    "AgentNotification",
    "AgentRequest",
    "AgentResponse",
    "AgentResponseMessage",
    "ClientErrorMessage",
    "ClientNotification",
    "ClientRequest",
    "ClientResponse",
    "ClientResponseMessage",
    "Jsonrpc",
    # Environment-variable auth is not in the schema acp_fast is generated from.
    "AuthEnvVar",
    "AuthMethodEnvVar",
    "EnvVarAuthMethod",
    # Elicitation of 0.12, whose shape the schema has changed since.
    "CreateElicitationRequest",
    "CreateElicitationResponse",
    "CreateFormElicitationRequest",
    "CreateFormRequestElicitationRequest",
    "CreateFormSessionElicitationRequest",
    "CreateOtherElicitationRequest",
    "CreateUrlElicitationRequest",
    "CreateUrlRequestElicitationRequest",
    "CreateUrlSessionElicitationRequest",
    "ElicitationContentValue",
    "ElicitationFormRequestMode",
    "ElicitationFormSessionMode",
    "ElicitationMode",
    "ElicitationOtherPropertySchema",
    "ElicitationUrlRequestMode",
    "ElicitationUrlSessionMode",
    "OtherElicitationResponse",
    "OtherMultiSelectItems",
}

# Top-level acp names (acp.__all__) compat does not provide.
TOP_LEVEL_NOT_COVERED = {
    "AGENT_METHODS",
    "CLIENT_METHODS",
    "default_environment",
    "spawn_client_process",
    "spawn_stdio_connection",
    "spawn_stdio_transport",
    "stdio_streams",
} | {name for name in SCHEMA_NOT_COVERED if name in acp.__all__}

# The four names this list was started for: the official tagged variants.
VARIANTS = {
    "HttpMcpServer": "McpServerHttp",
    "SseMcpServer": "McpServerSse",
    "AcpMcpServer": "McpServerAcp",
    "TerminalAuthMethod": "AuthMethodTerminal",
}


def official_schema_names() -> set[str]:
    """acp.schema's own names: its models and enums, its Literal and Union aliases."""
    names = set()
    for name, value in vars(acp.schema).items():
        if name.startswith("_") or not name.isidentifier():
            continue  # private, or pydantic's generated RootModel[...] entries
        if isinstance(value, type):
            if issubclass(value, pydantic.BaseModel | enum.Enum) and (
                value.__module__ == "acp.schema" and value.__name__ == name
            ):
                names.add(name)
        elif typing.get_origin(value) in (typing.Literal, typing.Union):
            names.add(name)
    return names


def test_official_schema_names_are_covered_except_the_listed_ones() -> None:
    official = official_schema_names()
    covered = official - SCHEMA_NOT_COVERED
    assert set(VARIANTS) <= covered
    missing = sorted(name for name in covered if not hasattr(compat_schema, name))
    assert missing == []
    assert covered <= set(compat_schema.__all__)
    # The exceptions are official names, and really missing.
    assert SCHEMA_NOT_COVERED <= official
    assert [name for name in SCHEMA_NOT_COVERED if hasattr(compat_schema, name)] == []


def test_official_top_level_names_are_covered_except_the_listed_ones() -> None:
    covered = set(acp.__all__) - TOP_LEVEL_NOT_COVERED
    assert sorted(name for name in covered if not hasattr(acp_fast.compat, name)) == []
    assert TOP_LEVEL_NOT_COVERED <= set(acp.__all__)
    assert [name for name in TOP_LEVEL_NOT_COVERED if hasattr(acp_fast.compat, name)] == []


@pytest.mark.parametrize(("official", "ours"), sorted(VARIANTS.items()))
def test_the_official_variant_names_are_the_compat_classes(official: str, ours: str) -> None:
    cls = getattr(compat_schema, official)
    assert cls is getattr(compat_schema, ours)
    assert getattr(acp_fast.compat, official) is cls
    # Built as the official SDK builds it, it dumps the same.
    fields: dict[str, Any] = {
        "HttpMcpServer": {"name": "n", "url": "https://x", "headers": []},
        "SseMcpServer": {"name": "n", "url": "https://x", "headers": []},
        "AcpMcpServer": {"name": "n", "server_id": "srv"},
        "TerminalAuthMethod": {"id": "t", "name": "Terminal"},
    }[official]
    ours_built = cls(**fields)  # the tag is optional here
    theirs = getattr(acp.schema, official)(**fields, type=ours_built.type)
    assert ours_built.model_dump(by_alias=True, exclude_none=True) == theirs.model_dump(
        by_alias=True, exclude_none=True
    )


def test_received_mcp_servers_are_instances_of_the_official_names() -> None:
    request = compat_schema.NewSessionRequest.model_validate(
        {
            "cwd": "/",
            "mcpServers": [
                {"type": "http", "name": "h", "url": "https://h", "headers": []},
                {"type": "sse", "name": "s", "url": "https://s", "headers": []},
            ],
        }
    )
    http, sse = request.mcp_servers
    assert isinstance(http, compat_schema.HttpMcpServer)
    assert isinstance(sse, compat_schema.SseMcpServer)


def test_model_validate_errors_are_value_errors_not_pydantic_ones() -> None:
    # docs/migration.md: `except ValueError` catches both SDKs' errors;
    # `except pydantic.ValidationError` only the official one.
    bad = {"stopReason": 3}
    with pytest.raises(ValueError) as ours:
        compat_schema.PromptResponse.model_validate(bad)
    with pytest.raises(ValueError) as theirs:
        acp.schema.PromptResponse.model_validate(bad)
    assert isinstance(theirs.value, pydantic.ValidationError)
    assert not isinstance(ours.value, pydantic.ValidationError)
    assert "stopReason" in str(ours.value)
