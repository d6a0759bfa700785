"""The intermediate representation: what preprocessing learnt about a schema.

datamodel-code-generator receives a rewritten JSON Schema and knows nothing of
methods, tags or open unions; the renderer takes those facts from here.  Property
names are wire names (``sessionId``); the renderer maps them to attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

UnionKind = Literal["tagged", "object"]


@dataclass(frozen=True)
class Method:
    """One wire method and the definitions of its payloads."""

    method: str
    #: ``x-side``: who handles it (``agent``, ``client``, ``protocol``, ``both``).
    side: str
    #: Params definition when sent as a request.
    request: str | None = None
    #: Result definition of that request.
    response: str | None = None
    #: Params definition when sent as a notification.
    notification: str | None = None


@dataclass(frozen=True)
class Variant:
    """One known branch of a union."""

    cls: str
    #: Tag value, or ``None`` for an untagged branch (``object`` unions only).
    tag: str | None


@dataclass(frozen=True)
class Union:
    """A union of object types.

    ``tagged``: every branch pins the same property to a constant, so msgspec decodes
    it natively as a tagged union of Structs.  ``object``: some branch is untagged,
    or the union is a method payload (which must be a class that carries the method
    metadata); it becomes a marker class the variants inherit, decoded by dispatch.
    """

    name: str
    kind: UnionKind
    #: Wire name of the tag property (``None`` if no branch is tagged).
    tag_field: str | None
    variants: tuple[Variant, ...]
    #: The schema has a catch-all branch: unknown tags are kept, not rejected.
    open: bool
    #: Class validating the fields every unknown variant must carry, if any.
    other: str | None = None


@dataclass(frozen=True)
class Branches:
    """A struct merged from a union nested in it; ``__post_init__`` checks the branches.

    ``required`` maps a tag value (``None``: no tag / untagged) to alternatives, each
    the wire names one branch requires on top of the struct's own required fields.
    """

    cls: str
    tag_field: str | None
    required: dict[str | None, tuple[tuple[str, ...], ...]]


@dataclass(frozen=True)
class NestedTag:
    """A variant whose body is itself a tagged union, merged into one struct.

    The inner tag is decoded as a closed ``Literal`` so an unknown value fails the
    fast path; when ``open`` the lenient pass then keeps the whole object as an
    unknown variant of the outer union (see ``acp_fast.schema._lenient``).
    """

    cls: str
    tag_field: str
    known: tuple[str, ...]
    open: bool


@dataclass
class ModuleIR:
    """Everything the renderer needs besides datamodel-code-generator's output."""

    major: str
    unstable: bool
    release: str
    protocol_version: int
    #: ``meta*.json`` tables, identifier → wire method.
    agent_methods: dict[str, str]
    client_methods: dict[str, str]
    protocol_methods: dict[str, str]
    methods: list[Method] = field(default_factory=list)
    #: Definition name → ``(x-method, x-side)`` for every annotated payload.
    payloads: dict[str, tuple[str, str]] = field(default_factory=dict)
    unions: dict[str, Union] = field(default_factory=dict)
    #: Class → ``(tag wire name, tag value)`` for msgspec-tagged Structs.
    tags: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Class → object-union marker classes it inherits.
    union_bases: dict[str, list[str]] = field(default_factory=dict)
    branches: dict[str, Branches] = field(default_factory=dict)
    nested: dict[str, NestedTag] = field(default_factory=dict)
    #: Class → wire names with ``x-deserialize-default-on-error``.
    default_on_error: dict[str, list[str]] = field(default_factory=dict)
    #: Class → wire names with ``x-deserialize-skip-invalid-items``.
    skip_invalid_items: dict[str, list[str]] = field(default_factory=dict)
    #: Classes invented by preprocessing, for short docstrings: class → description.
    notes: dict[str, str] = field(default_factory=dict)
