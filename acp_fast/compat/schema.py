"""The official SDK's schema names (``acp.schema``), on acp_fast's messages.

``from acp_fast.compat.schema import TextContentBlock, PromptResponse`` gives
classes that behave as the official pydantic models do where user code
depends on it (see ``acp_fast.compat._models``): keyword construction, ``None``
for omitted fields, ``model_dump(by_alias=True, exclude_none=True)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from ..schema import v1
from ._models import CLASSES, CompatModel

globals().update({name: cls for name, cls in CLASSES.items() if not name.startswith("_")})

#: Union aliases the official module defines (for annotations and isinstance).
ContentBlock: Any = Union[  # noqa: UP007
    tuple(
        CLASSES[n]
        for n in (
            "TextContentBlock",
            "ImageContentBlock",
            "AudioContentBlock",
            "ResourceContentBlock",
            "EmbeddedResourceContentBlock",
        )
    )
]
SessionUpdate: Any = Union[  # noqa: UP007
    tuple(
        CLASSES[n]
        for n in (
            "UserMessageChunk",
            "AgentMessageChunk",
            "AgentThoughtChunk",
            "ToolCallStart",
            "ToolCallProgress",
            "AgentPlanUpdate",
            "AgentPlanContentUpdate",
            "AgentPlanRemovedUpdate",
            "AvailableCommandsUpdate",
            "CurrentModeUpdate",
            "ConfigOptionUpdate",
            "SessionInfoUpdate",
            "UsageUpdate",
        )
    )
]
ToolCallContent: Any = Union[  # noqa: UP007
    tuple(
        CLASSES[n]
        for n in ("ContentToolCallContent", "FileEditToolCallContent", "TerminalToolCallContent")
    )
]
BaseModel = CompatModel

#: Official names for a class here under another name. The official module
#: has an untagged base (``McpServerHttp``) and a tagged variant
#: (``HttpMcpServer``); here one class is both, its tag optional in the
#: constructor (docs/migration.md), so each name is that one class.
_ALIASES = {
    "HttpMcpServer": "McpServerHttp",
    "SseMcpServer": "McpServerSse",
    "AcpMcpServer": "McpServerAcp",
    "TerminalAuthMethod": "AuthMethodTerminal",
    "NesEditSuggestionVariant": "NesSuggestionEdit",
    "NesJumpSuggestionVariant": "NesSuggestionJump",
    "NesRenameSuggestionVariant": "NesSuggestionRename",
    "NesSearchAndReplaceSuggestionVariant": "NesSuggestionSearchAndReplace",
}
globals().update({alias: CLASSES[name] for alias, name in _ALIASES.items()})

#: The official module's ``Literal`` aliases, for annotations.
_LITERALS = (
    "PermissionOptionKind",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "StopReason",
    "ToolCallStatus",
    "ToolKind",
)
globals().update({name: getattr(v1, name) for name in _LITERALS})

__all__ = tuple(
    sorted(
        [name for name in CLASSES if not name.startswith("_")]
        + ["BaseModel", "ContentBlock", "SessionUpdate", "ToolCallContent"]
        + list(_ALIASES)
        + list(_LITERALS)
    )
)

if TYPE_CHECKING:

    def __getattr__(name: str) -> Any: ...
