"""Message classes that behave like the official SDK's pydantic models.

Built once, at import, from the generated ``acp_fast.schema.v1_unstable``
classes (a superset of ``v1``): one ``msgspec.Struct`` per schema class, with

* the official SDK's class names (``TextContentBlock`` for
  ``ContentBlockText``, ``ToolCallStart`` for ``SessionUpdateToolCall``, ...);
* ``None`` for every omitted optional field (never ``msgspec.UNSET``), and the
  official defaults where it has them (``ClientCapabilities().fs`` is a
  ``FileSystemCapabilities`` with both flags false);
* the union tag as a plain attribute (``block.type == "text"``,
  ``update.session_update == "tool_call"``), optional in the constructor;
* ``field_meta`` for ``_meta``;
* ``model_dump`` / ``model_dump_json`` / ``model_validate`` / ``model_copy``.

The instances encode to the same JSON as the generated classes (``None``
fields are left out), so they are sent as they are. Received messages are
decoded by the generated classes (the fast path) and then converted with
``to_compat``: a walk over the fields, with no validation left to do.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, cast, get_args

import msgspec

from ..schema import convert, v1, v1_unstable
from ..schema._base import Base, ObjectUnion

__all__ = ("CLASSES", "CompatModel", "to_compat")

# Generated name -> the official SDK's name for the same class.
RENAMES: dict[str, str] = {
    "ContentBlockText": "TextContentBlock",
    "ContentBlockImage": "ImageContentBlock",
    "ContentBlockAudio": "AudioContentBlock",
    "ContentBlockResourceLink": "ResourceContentBlock",
    "ContentBlockResource": "EmbeddedResourceContentBlock",
    "ToolCallContentContent": "ContentToolCallContent",
    "ToolCallContentDiff": "FileEditToolCallContent",
    "ToolCallContentTerminal": "TerminalToolCallContent",
    "SessionUpdateUserMessageChunk": "UserMessageChunk",
    "SessionUpdateAgentMessageChunk": "AgentMessageChunk",
    "SessionUpdateAgentThoughtChunk": "AgentThoughtChunk",
    "SessionUpdateToolCall": "ToolCallStart",
    "SessionUpdateToolCallUpdate": "ToolCallProgress",
    "SessionUpdatePlan": "AgentPlanUpdate",
    "SessionUpdatePlanUpdate": "AgentPlanContentUpdate",
    "SessionUpdatePlanRemoved": "AgentPlanRemovedUpdate",
    "SessionUpdateAvailableCommandsUpdate": "AvailableCommandsUpdate",
    "SessionUpdateCurrentModeUpdate": "CurrentModeUpdate",
    "SessionUpdateConfigOptionUpdate": "ConfigOptionUpdate",
    "SessionUpdateSessionInfoUpdate": "SessionInfoUpdate",
    "SessionUpdateUsageUpdate": "UsageUpdate",
    "PlanUpdateContentItems": "PlanUpdateItems",
    "PlanUpdateContentFile": "PlanUpdateFile",
    "PlanUpdateContentMarkdown": "PlanUpdateMarkdown",
    "RequestPermissionOutcomeSelected": "AllowedOutcome",
    "RequestPermissionOutcomeCancelled": "DeniedOutcome",
    "SetSessionConfigOptionRequestBoolean": "SetSessionConfigOptionBooleanRequest",
    "SetSessionConfigOptionRequestValueId": "SetSessionConfigOptionSelectRequest",
    "CreateElicitationResponseAccept": "AcceptElicitationResponse",
    "CreateElicitationResponseDecline": "DeclineElicitationResponse",
    "CreateElicitationResponseCancel": "CancelElicitationResponse",
    "ElicitationPropertySchemaString": "ElicitationStringPropertySchema",
    "ElicitationPropertySchemaNumber": "ElicitationNumberPropertySchema",
    "ElicitationPropertySchemaInteger": "ElicitationIntegerPropertySchema",
    "ElicitationPropertySchemaBoolean": "ElicitationBooleanPropertySchema",
    "ElicitationPropertySchemaArray": "ElicitationMultiSelectPropertySchema",
}

# Shared base classes of tagged variants whose official name belongs to the
# variant (``AvailableCommandsUpdate`` is the tagged update there): kept under
# a private name.
_SHADOWED = set(RENAMES.values())

# Defaults the official models fill in for omitted fields. Scalars are
# defaults (left out again when encoding, as the official SDK leaves out
# defaults); objects are made fresh per instance.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "PromptCapabilities": {"image": False, "audio": False, "embedded_context": False},
    "McpCapabilities": {"http": False, "sse": False, "acp": False},
    "FileSystemCapabilities": {"read_text_file": False, "write_text_file": False},
    "AuthCapabilities": {"terminal": False},
    "ClientCapabilities": {
        "fs": "FileSystemCapabilities",
        "terminal": False,
        "auth": "AuthCapabilities",
    },
    "AgentCapabilities": {
        "load_session": False,
        "prompt_capabilities": "PromptCapabilities",
        "mcp_capabilities": "McpCapabilities",
        "session_capabilities": "SessionCapabilities",
    },
    "InitializeRequest": {"client_capabilities": "ClientCapabilities"},
    "InitializeResponse": {"agent_capabilities": "AgentCapabilities", "auth_methods": list},
}


class CompatModel(msgspec.Struct, omit_defaults=True, kw_only=True, repr_omit_defaults=True):
    """Base of the compatibility classes: the pydantic methods user code calls."""

    #: (attribute, wire name) of each field, set per class.
    __compat_fields__: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The generated class this one mirrors.
    __schema_class__: ClassVar[type[Any]]
    #: The attribute holding the union tag (``type``, ``session_update``...), if any.
    __compat_tag__: ClassVar[str | None] = None

    def model_dump(
        self,
        *,
        mode: str = "python",
        by_alias: bool = False,
        exclude_none: bool = False,
        **_: Any,
    ) -> dict[str, Any]:
        """The message as a dict, like pydantic's ``model_dump``."""
        result: dict[str, Any] = _dump(self, by_alias, exclude_none)
        return result

    def model_dump_json(
        self, *, by_alias: bool = False, exclude_none: bool = False, **_: Any
    ) -> str:
        return msgspec.json.encode(_dump(self, by_alias, exclude_none)).decode()

    @classmethod
    def model_validate(cls, obj: Any) -> Any:
        """Build from a dict of wire (camelCase) names, as received."""
        if isinstance(obj, cls):
            return obj
        return to_compat(convert(cls.__schema_class__, obj))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        copy = msgspec.structs.replace(self, **(update or {}))
        return copy


def _dump(value: Any, by_alias: bool, exclude_none: bool) -> Any:
    if isinstance(value, CompatModel):
        out: dict[str, Any] = {}
        for attr, wire in value.__compat_fields__:
            item = getattr(value, attr)
            if item is None and exclude_none:
                continue
            out[wire if by_alias else attr] = _dump(item, by_alias, exclude_none)
        return out
    if isinstance(value, list | tuple):
        return [_dump(item, by_alias, exclude_none) for item in value]
    if isinstance(value, dict):
        return {key: _dump(item, by_alias, exclude_none) for key, item in value.items()}
    return value


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _schema_classes(module: Any) -> dict[str, type[Base]]:
    return {
        name: obj
        for name, obj in vars(module).items()
        if inspect.isclass(obj) and issubclass(obj, Base) and obj.__module__ == module.__name__
    }


def _post_init(
    name: str, tag: tuple[str, str] | None, defaults: list[tuple[str, Callable[[], Any]]]
) -> Callable[[Any], None]:
    # Generated source, one straight-line function per class: this runs for
    # every message received (the conversion builds through ``__init__``).
    lines = ["def __post_init__(self):"]
    scope: dict[str, Any] = {"name": name}
    if tag is not None:
        attr, value = tag
        lines += [
            f"    t = self.{attr}",
            "    if t is None:",
            f"        self.{attr} = {value!r}",
            f"    elif t != {value!r}:",
            f"        raise ValueError(name + {f'.{attr} must be {value!r}, not '!r} + repr(t))",
        ]
    for index, (attr, factory) in enumerate(defaults):
        scope[f"f{index}"] = factory
        lines += [f"    if self.{attr} is None:", f"        self.{attr} = f{index}()"]
    return cast("Callable[[Any], None]", _compile(lines, scope, "__post_init__"))


def _compile(lines: list[str], scope: dict[str, Any], name: str) -> Any:
    exec("\n".join(lines), scope)
    return scope[name]


def _needs_conversion(tp: Any) -> bool:
    """Whether values of ``tp`` may hold generated classes (else plain JSON)."""
    if isinstance(tp, type):
        return issubclass(tp, msgspec.Struct | ObjectUnion)
    return any(_needs_conversion(arg) for arg in get_args(tp))


def _converter(cls: type, schema_cls: type) -> Callable[[Any], Any]:
    lines = ["def convert(v):", "    k = {}"]
    for info in msgspec.structs.fields(schema_cls):
        target = "field_meta" if info.name == "meta" else info.name
        value = "tc(x)" if _needs_conversion(info.type) else "x"
        if info.required:
            lines.append(f"    k[{target!r}] = {value.replace('x', f'v.{info.name}')}")
        else:
            lines += [
                f"    x = v.{info.name}",
                "    if x is not U:",
                f"        k[{target!r}] = {value}",
            ]
    lines.append("    return C(**k)")
    return cast(
        "Callable[[Any], Any]",
        _compile(lines, {"C": cls, "U": msgspec.UNSET, "tc": to_compat}, "convert"),
    )


def _build() -> tuple[dict[str, type[CompatModel]], dict[type, Callable[[Any], Any]]]:
    source = _schema_classes(v1_unstable)
    classes: dict[str, type[CompatModel]] = {}
    for name, schema_cls in source.items():
        public = RENAMES.get(name)
        if public is None:
            public = f"_{name}" if name in _SHADOWED else name
        config = schema_cls.__struct_config__
        fields: list[Any] = []
        compat_fields: list[tuple[str, str]] = []
        tag: tuple[str, str] | None = None
        if isinstance(config.tag_field, str) and isinstance(config.tag, str):
            attr = _snake(config.tag_field)
            fields.append((attr, Any, msgspec.field(name=config.tag_field, default=None)))
            compat_fields.append((attr, config.tag_field))
            tag = (attr, config.tag)
        defaults = _DEFAULTS.get(public, {})
        factories: list[tuple[str, Callable[[], Any]]] = []
        for info in msgspec.structs.fields(schema_cls):
            attr = "field_meta" if info.name == "meta" else info.name
            default = defaults.get(attr)
            if info.required:
                spec = msgspec.field(name=info.encode_name)
            elif isinstance(default, bool):
                spec = msgspec.field(name=info.encode_name, default=default)
            else:
                spec = msgspec.field(name=info.encode_name, default=None)
                if default is list:
                    factories.append((attr, list))
                elif isinstance(default, str):
                    factories.append((attr, _lazy(classes, default)))
            fields.append((attr, Any, spec))
            compat_fields.append((attr, info.encode_name))
        namespace: dict[str, Any] = {
            "__compat_fields__": tuple(compat_fields),
            "__schema_class__": schema_cls,
            "__compat_tag__": tag[0] if tag is not None else None,
            "__qualname__": public.lstrip("_"),
        }
        for constant in ("METHOD", "SIDE", "RESPONSE"):
            if constant in schema_cls.__dict__:
                namespace[constant] = schema_cls.__dict__[constant]
        if tag is not None or factories:
            namespace["__post_init__"] = _post_init(public.lstrip("_"), tag, factories)
        cls: Any = msgspec.defstruct(
            public.lstrip("_"),
            fields,
            bases=(CompatModel,),
            module="acp_fast.compat.schema",
            namespace=namespace,
            kw_only=True,
            omit_defaults=True,
            repr_omit_defaults=True,
        )
        classes[public] = cls
    converters: dict[type, Callable[[Any], Any]] = {}
    by_source = {source_name: classes[_public(source_name)] for source_name in source}
    for module in (v1_unstable, v1):
        for name, schema_cls in _schema_classes(module).items():
            target = by_source.get(name)
            if target is not None:
                converters[schema_cls] = _converter(target, schema_cls)
    return classes, converters


def _public(name: str) -> str:
    public = RENAMES.get(name)
    if public is None:
        public = f"_{name}" if name in _SHADOWED else name
    return public


def _lazy(classes: dict[str, type[CompatModel]], name: str) -> Callable[[], Any]:
    def make() -> Any:
        return classes[name]()

    return make


def to_compat(value: Any) -> Any:
    """A received (generated-class) value as compatibility objects."""
    convert = _CONVERTERS.get(type(value))
    if convert is not None:
        return convert(value)
    kind = type(value)
    if kind is list:
        return [to_compat(item) for item in value]
    if kind is dict:
        return {key: to_compat(item) for key, item in value.items()}
    return value


_CONVERTERS: dict[type, Callable[[Any], Any]] = {}
CLASSES, _built = _build()
_CONVERTERS.update(_built)
