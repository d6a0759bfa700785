"""Building blocks the generated modules (``v1.py``, ``v2.py``, ...) import.

Kept small and import-light: the generated modules import this at start-up.
How the pieces are used to decode is described in ``acp_fast.schema._codec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Generic, NamedTuple, TypeVar

import msgspec

__all__ = (
    "Base",
    "DecodeHints",
    "MethodInfo",
    "NestedTag",
    "ObjectUnion",
    "OpenUnion",
    "Request",
    "RequestUnion",
    "SchemaError",
    "UnionSpec",
    "UnknownVariant",
    "check_branches",
)


class Base(msgspec.Struct, omit_defaults=True, kw_only=True, repr_omit_defaults=True):
    """Base of every generated message class.

    Optional fields default to ``msgspec.UNSET`` and ``omit_defaults`` leaves them out
    when encoding, so a decoded message re-encodes to what the peer sent: omitted stays
    omitted, ``null`` stays ``null``.  No field has another default.
    """


ResponseT = TypeVar("ResponseT")


class Request(Base, Generic[ResponseT], kw_only=True):
    """Base of every generated request class; ``ResponseT`` is its result type.

    The parameter exists for type checkers only: ``cx.send_request(r)`` for an
    ``r`` of a ``Request[InitializeResponse]`` class is a
    ``SentRequest[InitializeResponse]``. At run time the class's ``RESPONSE``
    attribute names the same type, for decoding.
    """


class UnknownVariant(dict[str, Any]):
    """A variant of an open union that this schema version does not know.

    It *is* the JSON object as received (a ``dict``, tag and unknown fields
    included), so it encodes back exactly.  ``tag_field`` names the union's tag
    property; ``tag`` reads it.  Build one to send a custom variant::

        UnknownVariant({"sessionUpdate": "_acme_progress", "percent": 40}, "sessionUpdate")
    """

    __slots__ = ("tag_field",)

    def __init__(self, data: Mapping[str, Any], tag_field: str | None = None) -> None:
        super().__init__(data)
        self.tag_field = tag_field

    @property
    def tag(self) -> Any:
        """The tag value, or ``None`` when ``tag_field`` is unset or absent."""
        return None if self.tag_field is None else self.get(self.tag_field)

    def __repr__(self) -> str:
        return f"UnknownVariant({dict.__repr__(self)}, tag_field={self.tag_field!r})"


class SchemaError(msgspec.ValidationError):
    """A message does not match its schema type.

    ``path`` is the JSON path of the offending value (``$.update.content.text``).
    The message is short and bounded: it never echoes large parts of the input.
    """

    MAX_MESSAGE: ClassVar[int] = 200

    def __init__(self, message: str, path: str = "$") -> None:
        if len(message) > self.MAX_MESSAGE:
            message = message[: self.MAX_MESSAGE - 1] + "…"
        super().__init__(f"{message} - at `{path}`")
        self.path = path
        self.reason = message


class OpenUnion:
    """``Annotated`` marker of an open tagged union (runtime only).

    msgspec ignores it and decodes the closed union of known variants; when that
    fails, the lenient pass reads it to keep unknown variants (see ``_lenient``).
    ``other`` is the Struct that unknown variants must still match, if any.
    """

    __slots__ = ("other", "tag_field")

    def __init__(self, tag_field: str, other: type[Base] | None = None) -> None:
        self.tag_field = tag_field
        self.other = other

    def __repr__(self) -> str:
        return f"OpenUnion({self.tag_field!r}, {self.other!r})"


class UnionSpec(NamedTuple):
    """How to decode an ``ObjectUnion``: by tag, else by trying untagged members."""

    #: Wire name of the tag property, ``None`` if no member is tagged.
    tag_field: str | None
    #: Member class names, in schema order (resolved in the defining module).
    members: tuple[str, ...]
    #: Unknown tags are kept as ``UnknownVariant`` instead of rejected.
    open: bool = False
    #: Class name unknown variants must still match, if any.
    other: str | None = None


class ObjectUnion:
    """Marker base of unions msgspec cannot decode natively.

    Those are unions with an untagged member (``EmbeddedResourceResource``: text or
    blob contents) and unions that are method payloads.  Every member inherits the
    marker, so ``isinstance(x, McpServer)`` holds for each kind of MCP server and a
    field typed with the marker accepts any member.  msgspec hands the JSON object
    to the decode hook of ``acp_fast.schema``, which picks the member.
    """

    __slots__ = ()
    __acp_union__: ClassVar[UnionSpec]


class RequestUnion(ObjectUnion, Generic[ResponseT]):
    """Marker base of a request payload that is a union; ``ResponseT`` is its result.

    Its members inherit it, so each is typed by the result like a ``Request``.
    """

    __slots__ = ()


class NestedTag(NamedTuple):
    """A variant merged from a nested tagged union (see ``codegen.ir.NestedTag``)."""

    #: Wire name of the inner tag property.
    tag_field: str
    known: frozenset[str]
    open: bool


class DecodeHints(NamedTuple):
    """Per-module facts the lenient decoding pass needs (by class, attribute names)."""

    #: ``x-deserialize-default-on-error``: a field that fails to decode is dropped.
    default_on_error: Mapping[type, frozenset[str]]
    #: ``x-deserialize-skip-invalid-items``: list items that fail to decode are dropped.
    skip_invalid_items: Mapping[type, frozenset[str]]
    nested_tags: Mapping[type, NestedTag]


class MethodInfo(NamedTuple):
    """What the schema says about one wire method.

    A method is a request (``request``/``response`` set), a notification
    (``notification`` set) or, like unstable ``mcp/message``, both.
    """

    method: str
    #: ``x-side``: who handles it: ``"agent"``, ``"client"``, ``"protocol"`` or ``"both"``.
    side: str
    #: Params type when sent as a request.
    request: Any = None
    #: Result type of that request.
    response: Any = None
    #: Params type when sent as a notification.
    notification: Any = None

    @property
    def kind(self) -> str:
        """``"request"``, ``"notification"``, or ``"both"``."""
        if self.request is not None:
            return "both" if self.notification is not None else "request"
        return "notification"

    @property
    def params(self) -> Any:
        """Params type (of the request form when the method is both)."""
        return self.request if self.request is not None else self.notification

    @property
    def result(self) -> Any:
        """Result type, ``None`` for notifications."""
        return self.response


_BranchTable = Mapping[str | None, tuple[tuple[str, ...], ...]]
_NO_TAG: Final = None


def check_branches(obj: Base, tag_attr: str | None, table: _BranchTable) -> None:
    """Check that ``obj`` holds every field one branch of a merged union requires.

    ``table`` maps the tag value (``None``: no tag) to alternatives, each a tuple of
    attribute names; one alternative must be fully set.  Raises ``ValueError``
    (msgspec reports it as a validation error at the object's path).
    """
    tag = _NO_TAG if tag_attr is None else getattr(obj, tag_attr)
    alternatives = table.get(tag if isinstance(tag, str) else _NO_TAG)
    if not alternatives:
        return
    for fields in alternatives:
        if all(getattr(obj, name) is not msgspec.UNSET for name in fields):
            return
    wire = {f.name: f.encode_name for f in msgspec.structs.fields(obj)}
    choices = " or ".join(
        "+".join(f"`{wire.get(name, name)}`" for name in fields) for fields in alternatives
    )
    raise ValueError(f"Object missing required field {choices}")
