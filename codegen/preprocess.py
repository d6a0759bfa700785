"""Stage 2: rewrite the schema into shapes that map one to one onto msgspec Structs.

datamodel-code-generator gets a schema in which every definition is one of:

* an object (``type: object``, ``properties``, ``required``, at most one ``allOf``
  base) → a ``Struct``;
* an ``anyOf`` of ``$ref``\\ s to such objects → a union alias (the renderer turns
  it into a tagged union or a marker class, see ``ir.Union``);
* a scalar, enum, list or map → a type alias.

What the rewrite removes from the schema it records in the IR.  The shapes found in
the ACP schemas and what becomes of them:

``oneOf``/``anyOf`` of string (or integer) constants
    a ``Literal``; with a catch-all ``string`` branch (v2 "open enums") ``Literal[...] | str``.
object branches that each pin one property to a constant (``{"type": {"const": "text"}}``)
    a tagged union: one variant class per tag (``naming.variant_class``), the tag left
    to msgspec (``tag_field``/``tag``), properties shared by all branches copied into
    each variant.  A catch-all branch (titled ``other``, excluding the known tags with
    ``not``) makes the union *open*: unknown tags are kept, not rejected.
object branches of which some carry no tag, and unions that are method payloads
    an "object union": a marker class named after the definition, inherited by every
    variant and decoded by dispatching on the tag or trying the untagged branches in
    order (anyOf).  Method payloads need a class to carry ``METHOD``/``SIDE``/``RESPONSE``.
``list[A] | list[B]``
    ``list[<Definition>Item]`` with ``<Definition>Item`` an object union of A and B
    (msgspec decodes at most one array type per union).
an object with properties and an untagged ``anyOf`` of objects (elicitation scopes)
    one Struct with every branch's properties; required fields the branches do not
    share become optional and ``__post_init__`` checks one branch is complete.
a tagged variant whose body is itself a tagged union (v2 ``state_update``)
    one Struct for the variant with the inner tag as a closed ``Literal``
    (``ir.NestedTag``): msgspec tags are one level deep.

Schema ``default``\\ s are dropped so that an omitted field decodes as ``UNSET`` and
stays omitted when re-encoded (``overrides.DROPPED_KEYWORDS`` lists every dropped
keyword with its reason).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Final

from codegen import naming
from codegen.ir import Branches, Method, ModuleIR, NestedTag, Union, UnionKind, Variant
from codegen.load import InputError, Json, SchemaInput, schema_nodes
from codegen.overrides import DROPPED_KEYWORDS, ENVELOPE_MARKER

_DEFAULT_ON_ERROR: Final = "x-deserialize-default-on-error"
_SKIP_INVALID_ITEMS: Final = "x-deserialize-skip-invalid-items"
_SCALAR_TYPES: Final = frozenset({"string", "integer", "number", "boolean", "null"})


@dataclass(frozen=True)
class Prepared:
    """Output of preprocessing: the schema for datamodel-code-generator and the IR."""

    schema: Json
    ir: ModuleIR
    #: Definitions in the order they were emitted (source order, new ones after their union).
    order: tuple[str, ...]


@dataclass
class _Branch:
    """One object branch of a union, as found in the source schema."""

    index: int
    tag: str | None
    body: str | None
    props: Json
    required: list[str]
    other: bool
    title: str | None
    nested: list[Json] | None = None


@dataclass
class _Object:
    """An object definition being assembled."""

    props: Json = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    base: str | None = None
    default_on_error: list[str] = field(default_factory=list)
    skip_invalid_items: list[str] = field(default_factory=list)

    def add(self, name: str, schema: Json, *, required: bool) -> None:
        """Add a property (merging its type with an earlier one of the same name)."""
        if schema.get(_DEFAULT_ON_ERROR) and name not in self.default_on_error:
            self.default_on_error.append(name)
        if schema.get(_SKIP_INVALID_ITEMS) and name not in self.skip_invalid_items:
            self.skip_invalid_items.append(name)
        clean = normalize(schema)
        if name in self.props and self.props[name] != clean:
            earlier = self.props[name]
            options = earlier["anyOf"] if set(earlier) == {"anyOf"} else [earlier]
            if clean not in options:
                options = [*options, clean]
            clean = {"anyOf": options}
        self.props[name] = clean
        if required and name not in self.required:
            self.required.append(name)

    def schema(self) -> Json:
        out: Json = {"type": "object"}
        if self.base is not None:
            out["allOf"] = [{"$ref": _ref(self.base)}]
        out["properties"] = self.props
        if self.required:
            out["required"] = self.required
        return out


def _ref(name: str) -> str:
    return f"#/$defs/{name}"


def _deref(schema: Json) -> str | None:
    """Definition name of ``{"$ref": ...}`` or ``{"allOf": [{"$ref": ...}]}``, else None."""
    ref = schema.get("$ref")
    if ref is None:
        parts = schema.get("allOf")
        if isinstance(parts, list) and len(parts) == 1 and set(parts[0]) == {"$ref"}:
            ref = parts[0]["$ref"]
    return ref.removeprefix("#/$defs/") if isinstance(ref, str) else None


def normalize(node: Any) -> Any:
    """Drop keywords datamodel-code-generator must not see; simplify wrappers."""
    if isinstance(node, list):
        return [normalize(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: Json = {}
    for key, value in node.items():
        if key in DROPPED_KEYWORDS or key.startswith("x-"):
            continue
        if key in ("anyOf", "oneOf", "allOf"):
            out["anyOf" if key == "oneOf" else key] = normalize(value)
        elif key in ("const", "enum", "required"):
            out[key] = value
        elif key == "properties":
            out[key] = {name: normalize(sub) for name, sub in value.items()}
        else:
            out[key] = normalize(value)
    target = _deref(out)
    if target is not None and set(out) <= {"allOf", "$ref"}:
        return {"$ref": _ref(target)}
    if out.get("type") == "object" and "additionalProperties" in out and not out.get("properties"):
        # A free-form map: only its value type matters.
        out.pop("properties", None)
    return out


def _is_object_branch(branch: Json) -> bool:
    types = branch.get("type")
    if types is not None and types != "object":
        return False
    return "const" not in branch


def _catch_all(branch: Json) -> bool:
    """A plain ``{"type": "string"}`` (titled other/unknown) in an enum-like union."""
    return set(branch) <= {"type", "title", "format"} and branch.get("type") in (
        "string",
        "integer",
    )


class Preprocessor:
    """Rewrites one schema variant; ``run()`` returns the ``Prepared`` result."""

    def __init__(self, inp: SchemaInput) -> None:
        all_defs: Json = inp.schema["$defs"]
        self.src: Json = {n: s for n, s in all_defs.items() if not s.get(ENVELOPE_MARKER)}
        self.out: Json = {}
        self.refcount = _count_refs(self.src)
        meta = inp.meta
        self.ir = ModuleIR(
            major=inp.major,
            unstable=inp.unstable,
            release=inp.release,
            protocol_version=meta["version"],
            agent_methods=dict(meta["agentMethods"]),
            client_methods=dict(meta["clientMethods"]),
            protocol_methods=dict(meta["protocolMethods"]),
        )

    # -- driver -------------------------------------------------------------------

    def run(self) -> Prepared:
        for name, schema in self.src.items():
            if isinstance(schema.get("x-method"), str):
                self.ir.payloads[name] = (schema["x-method"], schema["x-side"])
            self.define(name, schema)
        self.ir.methods = self._methods()
        return Prepared({"$defs": self.out}, self.ir, tuple(self.out))

    def emit(self, name: str, schema: Json, obj: _Object | None = None) -> None:
        if name in self.out:
            raise InputError(f"definition {name!r} generated twice; see codegen.overrides")
        self.out[name] = schema
        if obj is not None:
            if obj.default_on_error:
                self.ir.default_on_error[name] = obj.default_on_error
            if obj.skip_invalid_items:
                self.ir.skip_invalid_items[name] = obj.skip_invalid_items

    def define(self, name: str, schema: Json) -> None:
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list):
            if all(_is_object_branch(b) for b in branches):
                self.object_union(name, schema, branches)
            elif all(b.get("type") == "array" for b in branches):
                self.list_union(name, branches)
            else:
                self.emit(name, self.scalar_union(branches))
        elif schema.get("type") == "object" and "properties" in schema:
            obj = _Object()
            self.add_properties(obj, schema)
            self.emit(name, obj.schema(), obj)
        else:
            self.emit(name, normalize(schema))

    # -- scalars --------------------------------------------------------------------

    def scalar_union(self, branches: list[Json]) -> Json:
        consts = [b["const"] for b in branches if "const" in b]
        rest = [b for b in branches if "const" not in b]
        if consts and all(_catch_all(b) for b in rest) and len(rest) <= 1:
            kind = "integer" if isinstance(consts[0], int) else "string"
            enum: Json = {"type": kind, "enum": consts}
            # A catch-all branch makes the enum open: unknown values are kept.
            return {"anyOf": [enum, {"type": kind}]} if rest else enum
        return {"anyOf": [normalize(b) for b in branches]}

    def list_union(self, name: str, branches: list[Json]) -> None:
        items = [_deref(b.get("items", {})) for b in branches]
        if None in items:
            raise InputError(f"{name}: a list union whose items are not definitions")
        union = naming.item_union(name)
        variants = tuple(Variant(item, None) for item in items if item is not None)
        self.register_union(Union(union, "object", None, variants, open=False))
        self.emit(union, {"anyOf": [{"$ref": _ref(v.cls)} for v in variants]})
        self.emit(name, {"type": "array", "items": {"$ref": _ref(union)}})

    # -- objects ---------------------------------------------------------------------

    def add_properties(self, obj: _Object, schema: Json, skip: str | None = None) -> None:
        required = set(schema.get("required", ()))
        for prop, sub in schema.get("properties", {}).items():
            if prop != skip:
                obj.add(prop, sub, required=prop in required)

    def body_schema(self, name: str) -> Json:
        body = self.src.get(name)
        if not isinstance(body, dict):
            raise InputError(f"reference to missing or envelope definition {name!r}")
        return body

    def merge_scopes(self, obj: _Object, owner: str, branches: list[Json]) -> None:
        """Fold an untagged union of objects into ``obj``; record the branch check."""
        alternatives: list[tuple[str, ...]] = []
        for branch in branches:
            target = _deref(branch)
            part = self.body_schema(target) if target else branch
            if "anyOf" in part or "oneOf" in part:
                raise InputError(f"{owner}: nested union inside a merged branch")
            alternatives.append(tuple(part.get("required", ())))
            for prop, sub in part.get("properties", {}).items():
                obj.add(prop, sub, required=False)
        shared = set.intersection(*(set(alt) for alt in alternatives))
        for prop in sorted(shared, key=list(obj.props).index):
            if prop not in obj.required:
                obj.required.append(prop)
        extra = tuple(tuple(p for p in alt if p not in shared) for alt in alternatives)
        if any(extra):
            self.ir.branches[owner] = Branches(owner, None, {None: extra})

    def parse_branch(self, owner: str, index: int, branch: Json) -> _Branch:
        props = dict(branch.get("properties", {}))
        tags = [p for p, s in props.items() if isinstance(s, dict) and "const" in s]
        if len(tags) > 1:
            raise InputError(f"{owner}: branch {index} pins several properties {tags}")
        tag_field = tags[0] if tags else None
        body = None
        if "$ref" in branch:
            body = _deref(branch)
        else:
            bases = branch.get("allOf", [])
            if len(bases) > 1 or any(set(b) != {"$ref"} for b in bases):
                raise InputError(f"{owner}: branch {index} has an unsupported allOf")
            body = _deref({"allOf": bases}) if bases else None
        nested = branch.get("anyOf")
        return _Branch(
            index=index,
            tag=tag_field,
            body=body,
            props=props,
            required=list(branch.get("required", ())),
            other="not" in branch,
            title=branch.get("title"),
            nested=nested if isinstance(nested, list) else None,
        )

    def object_union(self, name: str, schema: Json, raw: list[Json]) -> None:
        """Classify a union of object branches and emit its variants."""
        branches = [self.parse_branch(name, i, b) for i, b in enumerate(raw)]
        known = [b for b in branches if not b.other]
        others = [b for b in branches if b.other]
        tag_fields = {b.tag for b in branches if b.tag is not None}
        if len(tag_fields) > 1:
            raise InputError(f"{name}: branches are tagged by different properties {tag_fields}")
        tag_field = tag_fields.pop() if tag_fields else None
        untagged = [b for b in known if b.tag is None]
        payload = isinstance(schema.get("x-method"), str)

        if tag_field is None and not others and not payload and "properties" in schema:
            # Shared properties plus alternative scopes: one Struct, branch-checked.
            obj = _Object()
            self.add_properties(obj, schema)
            self.merge_scopes(obj, name, raw)
            self.emit(name, obj.schema(), obj)
            return
        if (
            len(known) == 1
            and not others
            and not payload
            and known[0].tag is None
            and known[0].body is not None
            and not known[0].props
            and "properties" not in schema
        ):
            # A union of one: just an alias of that branch.
            self.emit(name, {"$ref": _ref(known[0].body)})
            return

        kind: UnionKind = "object" if untagged or payload else "tagged"
        variants = tuple(self.variant(name, schema, b, tag_field, kind) for b in known)
        other = self.other_skeleton(name, schema, others[0], tag_field) if others else None
        union = Union(name, kind, tag_field, variants, open=bool(others), other=other)
        self.register_union(union)
        self.emit(name, {"anyOf": [{"$ref": _ref(v.cls)} for v in variants]})
        for v in variants:
            if v.cls not in self.out and v.cls not in self.src:
                raise InputError(f"{name}: variant {v.cls} was never defined")

    def register_union(self, union: Union) -> None:
        self.ir.unions[union.name] = union
        if union.kind == "object":
            for v in union.variants:
                self.ir.union_bases.setdefault(v.cls, []).append(union.name)

    def variant(
        self, union: str, schema: Json, branch: _Branch, tag_field: str | None, kind: str
    ) -> Variant:
        """Emit (or reuse) the class of one known branch."""
        tag = branch.props[tag_field]["const"] if branch.tag is not None and tag_field else None
        own = {p: s for p, s in branch.props.items() if p != tag_field}
        shared = schema.get("properties", {})
        body = branch.body
        nested_body = body is not None and self._is_tagged_union(body)

        if tag is None:
            if body is not None and not own and not shared:
                return Variant(body, None)
            if not branch.title:
                raise InputError(f"{union}: untagged branch {branch.index} needs a title")
            cls = naming.branch_class(union, branch.title)
        else:
            cls = naming.variant_class(union, tag)
            self.ir.tags[cls] = (tag_field or "", tag)
            if body == cls:
                # The body definition is this variant (``McpServer`` + ``http`` is
                # ``McpServerHttp``): tag it in place, it has no other use.
                if own or shared or self.refcount.get(body, 0) != 1:
                    raise InputError(f"{union}: cannot tag {body} in place; see overrides")
                return Variant(cls, tag)
            if cls in self.src:
                raise InputError(
                    f"{union}: variant name {cls} collides with a definition; "
                    "add it to codegen.overrides.VARIANT_NAMES"
                )
        obj = _Object()
        if nested_body and body is not None:
            self.merge_nested(obj, cls, body)
        elif body is not None:
            obj.base = body
        self.add_properties(obj, {"properties": shared, "required": schema.get("required", [])})
        self.add_properties(obj, {"properties": own, "required": branch.required})
        self.emit(cls, obj.schema(), obj)
        if tag is not None:
            self.ir.notes[cls] = f"The ``{tag_field}: {json.dumps(tag)}`` variant of ``{union}``."
        else:
            self.ir.notes[cls] = f"The ``{branch.title}`` branch of ``{union}`` (it has no tag)."
        return Variant(cls, tag)

    def _is_tagged_union(self, name: str) -> bool:
        schema = self.body_schema(name)
        branches = schema.get("anyOf", schema.get("oneOf"))
        if not isinstance(branches, list) or not all(_is_object_branch(b) for b in branches):
            return False
        return any(self.parse_branch(name, i, b).tag for i, b in enumerate(branches))

    def merge_nested(self, obj: _Object, cls: str, body: str) -> None:
        """Flatten a tagged union used as a variant body into ``obj`` (one level of tags)."""
        raw = self.body_schema(body).get("anyOf", self.body_schema(body).get("oneOf"))
        assert isinstance(raw, list)
        branches = [self.parse_branch(body, i, b) for i, b in enumerate(raw)]
        known = [b for b in branches if not b.other]
        inner_field = next(b.tag for b in known if b.tag)
        assert inner_field is not None
        tags = tuple(b.props[inner_field]["const"] for b in known)
        obj.add(inner_field, {"type": "string", "enum": list(tags)}, required=True)
        requirements: list[set[str]] = []
        for b in known:
            part = self.body_schema(b.body) if b.body else {}
            if "anyOf" in part or "allOf" in part:
                raise InputError(f"{body}: nested variant {b.body} is not a plain object")
            self.add_properties(obj, part)
            requirements.append(set(part.get("required", ())))
        shared = set.intersection(*requirements)
        obj.required = [p for p in obj.required if p == inner_field or p in shared]
        extra = {
            tag: (tuple(sorted(req - shared)),)
            for tag, req in zip(tags, requirements, strict=True)
            if req - shared
        }
        if extra:
            self.ir.branches[cls] = Branches(cls, inner_field, dict(extra))
        self.ir.nested[cls] = NestedTag(cls, inner_field, tags, open=len(known) < len(branches))

    def other_skeleton(
        self, union: str, schema: Json, branch: _Branch, tag_field: str | None
    ) -> str | None:
        """Emit ``<Union>Other`` when unknown variants must carry fields besides the tag."""
        obj = _Object()
        self.add_properties(obj, schema)
        self.add_properties(
            obj, {"properties": branch.props, "required": branch.required}, tag_field
        )
        name = naming.other_class(union)
        if branch.nested:
            self.merge_scopes(obj, name, branch.nested)
        if not obj.props:
            return None
        self.emit(name, obj.schema(), obj)
        self.ir.notes[name] = (
            f"What every unknown ``{union}`` variant must still match; unknown variants "
            "themselves decode as ``UnknownVariant``."
        )
        return name

    # -- methods ----------------------------------------------------------------------

    def _methods(self) -> list[Method]:
        found: dict[str, dict[str, str]] = {}
        sides: dict[str, str] = {}
        for name, (method, side) in self.ir.payloads.items():
            for suffix, role in (  # noqa: B007 - used after the loop
                ("Request", "request"),
                ("Response", "response"),
                ("Notification", "notification"),
            ):
                if name.endswith(suffix):
                    break
            else:
                raise InputError(f"{name}: x-method payload name has no Request/Response suffix")
            if role in found.setdefault(method, {}):
                raise InputError(f"{method}: two {role} payloads")
            found[method][role] = name
            if sides.setdefault(method, side) != side:
                raise InputError(f"{method}: payloads disagree on x-side")
        order = [
            *self.ir.agent_methods.values(),
            *self.ir.client_methods.values(),
            *self.ir.protocol_methods.values(),
        ]
        methods = []
        for method in dict.fromkeys(order):
            roles = found[method]
            if ("request" in roles) != ("response" in roles):
                raise InputError(f"{method}: a request payload needs a response payload")
            methods.append(
                Method(
                    method,
                    sides[method],
                    request=roles.get("request"),
                    response=roles.get("response"),
                    notification=roles.get("notification"),
                )
            )
        return methods


def _count_refs(defs: Json) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, node in schema_nodes(list(defs.values())):
        target = node.get("$ref")
        if isinstance(target, str):
            name = target.removeprefix("#/$defs/")
            counts[name] = counts.get(name, 0) + 1
    return counts


def preprocess(inp: SchemaInput) -> Prepared:
    """Rewrite ``inp`` for datamodel-code-generator and build the IR."""
    return Preprocessor(copy.deepcopy(inp)).run()
