"""The lenient decoding pass and the dispatch of object unions.

``convert(tp, obj)`` walks already decoded JSON (``obj``) against ``tp`` and builds
the typed value, honouring open unions, ``x-deserialize-default-on-error`` and
``x-deserialize-skip-invalid-items`` (see ``_codec`` for when it runs).  It compiles
one converter per type on first use; the per-class facts come from the
``_DECODE_HINTS`` table of the module defining the class.

Invariants: a converter either returns a value of its type (or an
``UnknownVariant`` at an open-union position) or raises ``SchemaError`` with the
JSON path of the first offending value; nothing else escapes.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Final, NamedTuple, Union

import msgspec

from acp_fast.schema._base import (
    DecodeHints,
    NestedTag,
    ObjectUnion,
    OpenUnion,
    SchemaError,
    UnknownVariant,
)

__all__ = ("convert", "dec_hook")

Path = tuple[str | int, ...]
Converter = Callable[[Any, Path], Any]

_NoneType: Final = type(None)
_KINDS: Final = {
    dict: "object",
    list: "array",
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    _NoneType: "null",
}


def convert(tp: Any, obj: Any) -> Any:
    """Convert decoded JSON ``obj`` to ``tp``, leniently (see the module docstring)."""
    return _plan(tp, skip_items=False)(obj, ())


def _format(path: Path) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _error(message: str, path: Path) -> SchemaError:
    return SchemaError(message, _format(path))


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- per-class facts ----------------------------------------------------------------


class _ClassHints(NamedTuple):
    default_on_error: frozenset[str]
    skip_invalid_items: frozenset[str]
    nested: NestedTag | None


_HINTS: Final[dict[type, _ClassHints]] = {}


def _class_hints(cls: type) -> _ClassHints:
    """Merge the ``_DECODE_HINTS`` entries of ``cls`` and its bases."""
    try:
        return _HINTS[cls]
    except KeyError:
        pass
    default_on_error: set[str] = set()
    skip: set[str] = set()
    nested = None
    for klass in cls.__mro__:
        table = getattr(sys.modules.get(klass.__module__), "_DECODE_HINTS", None)
        if not isinstance(table, DecodeHints):
            continue
        default_on_error |= table.default_on_error.get(klass, frozenset())
        skip |= table.skip_invalid_items.get(klass, frozenset())
        nested = nested or table.nested_tags.get(klass)
    hints = _HINTS[cls] = _ClassHints(frozenset(default_on_error), frozenset(skip), nested)
    return hints


class _Dispatch(NamedTuple):
    """An ``ObjectUnion`` with its member classes resolved."""

    tag_field: str | None
    tagged: dict[Any, type[msgspec.Struct]]
    #: Untagged members with the wire names each requires, tried in schema order.
    untagged: tuple[tuple[type[msgspec.Struct], frozenset[str]], ...]
    open: bool
    other: type[msgspec.Struct] | None

    def candidates(self, obj: dict[str, Any]) -> list[type[msgspec.Struct]]:
        """Untagged members whose required fields are all present (the others
        cannot match; skipping them saves a failed conversion)."""
        found = [m for m, needs in self.untagged if needs <= obj.keys()]
        return found or [m for m, _ in self.untagged]


_DISPATCH: Final[dict[type, _Dispatch]] = {}


def _dispatch(tp: type[ObjectUnion]) -> _Dispatch:
    try:
        return _DISPATCH[tp]
    except KeyError:
        pass
    spec = tp.__acp_union__
    module = sys.modules[tp.__module__]
    members = [getattr(module, name) for name in spec.members]
    tagged = {m.__struct_config__.tag: m for m in members if m.__struct_config__.tag is not None}
    untagged = tuple(
        (m, frozenset(f.encode_name for f in msgspec.structs.fields(m) if f.required))
        for m in members
        if m.__struct_config__.tag is None
    )
    other = getattr(module, spec.other) if spec.other else None
    found = _DISPATCH[tp] = _Dispatch(spec.tag_field, tagged, untagged, spec.open, other)
    return found


def dec_hook(tp: Any, obj: Any) -> Any:
    """msgspec decode hook: strict dispatch of ``ObjectUnion`` types.

    Unknown tags of open unions are rejected here; the lenient pass keeps them.
    """
    if not (isinstance(tp, type) and issubclass(tp, ObjectUnion)):
        raise NotImplementedError(f"no decoder for {tp!r}")
    d = _dispatch(tp)
    if type(obj) is not dict:
        raise TypeError(f"Expected `object`, got `{_kind(obj)}`")
    if d.tag_field is not None and d.tag_field in obj:
        member = d.tagged.get(obj[d.tag_field])
        if member is not None:
            return msgspec.convert(obj, member, dec_hook=dec_hook)
        if not d.untagged:
            raise ValueError(f"Invalid value {_short(obj[d.tag_field])} for `{d.tag_field}`")
    elif not d.untagged:
        raise ValueError(f"Object missing required field `{d.tag_field}`")
    for member in d.candidates(obj):
        try:
            return msgspec.convert(obj, member, dec_hook=dec_hook)
        except msgspec.ValidationError:
            continue
    raise ValueError(f"Object matches no member of `{tp.__name__}`")


# -- converters ----------------------------------------------------------------------

_PLANS: Final[dict[tuple[Any, bool], Converter]] = {}


def _plan(tp: Any, *, skip_items: bool) -> Converter:
    """The (cached) converter of ``tp``; ``skip_items`` drops invalid list items."""
    key = (tp, skip_items)
    try:
        return _PLANS[key]
    except KeyError:
        pass
    # A placeholder first, in case the type refers to itself.
    built: list[Converter] = []
    _PLANS[key] = lambda value, path: built[0](value, path)
    converter = _build(tp, skip_items)
    built.append(converter)
    _PLANS[key] = converter
    return converter


def _build(tp: Any, skip_items: bool) -> Converter:
    if tp is Any or tp is object:
        return lambda value, path: value
    if isinstance(tp, type):
        # Members inherit their union's marker: test for a Struct first.
        if issubclass(tp, msgspec.Struct):
            return _struct(tp)
        if issubclass(tp, ObjectUnion):
            return _object_union(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        marker = next((m for m in tp.__metadata__ if isinstance(m, OpenUnion)), None)
        if marker is not None:
            inner = args[0]
            members = typing.get_args(inner) if typing.get_origin(inner) else (inner,)
            return _tagged(members, marker)
        if typing.get_origin(args[0]) is list:
            return _list(typing.get_args(args[0])[0], skip_items, bounds=tp)
        return _leaf(tp)
    if origin is Union or origin is types.UnionType:
        return _union(tp, args, skip_items)
    if origin is list:
        return _list(args[0], skip_items, bounds=None)
    if origin is dict:
        return _dict(args[1])
    return _leaf(tp)


def _leaf(tp: Any) -> Converter:
    """Scalars and anything without structure of ours: msgspec validates.

    The value is converted as the one field of a Struct made for ``tp``: msgspec
    caches what it learns about Struct types, not about bare unions or literals.
    """
    box = msgspec.defstruct("_Leaf", [("value", tp)])

    def convert_leaf(value: Any, path: Path) -> Any:
        try:
            boxed: Any = msgspec.convert({"value": value}, box, dec_hook=dec_hook)
            return boxed.value
        except msgspec.ValidationError as exc:
            # msgspec's path is relative to the box: swap its root for ours.
            message, _, where = str(exc).partition(" - at `$.value")
            raise SchemaError(message, _format(path) + where.rstrip("`")) from None

    return convert_leaf


def _is_object_like(tp: Any) -> bool:
    if isinstance(tp, type):
        return issubclass(tp, msgspec.Struct | ObjectUnion)
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return any(isinstance(m, OpenUnion) for m in tp.__metadata__)
    return origin is dict


def _is_list_like(tp: Any) -> bool:
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return typing.get_origin(tp) is list


def _union(tp: Any, args: tuple[Any, ...], skip_items: bool) -> Converter:
    members = [a for a in args if a is not msgspec.UnsetType]
    allow_none = _NoneType in members
    objects = [m for m in members if _is_object_like(m)]
    lists = [m for m in members if _is_list_like(m)]
    scalars = [m for m in members if m not in objects and m not in lists]
    structs = [m for m in objects if isinstance(m, type) and issubclass(m, msgspec.Struct)]
    if len(structs) > 1:
        # A closed tagged union spelled inline.
        on_object: Converter | None = _tagged(tuple(structs), None)
    elif objects:
        on_object = _plan(objects[0], skip_items=skip_items)
    else:
        on_object = None
    on_list = _plan(lists[0], skip_items=skip_items) if lists else None
    on_scalar = _leaf(Union[tuple(scalars)]) if scalars else None  # noqa: UP007 - built at run time
    strict = _leaf(tp)

    def convert_union(value: Any, path: Path) -> Any:
        if value is None and allow_none:
            return None
        kind = type(value)
        if kind is dict and on_object is not None:
            return on_object(value, path)
        if kind is list and on_list is not None:
            return on_list(value, path)
        if kind is not dict and kind is not list and on_scalar is not None:
            return on_scalar(value, path)
        return strict(value, path)  # raises msgspec's own "Expected ..." message

    return convert_union


def _list(item_tp: Any, skip_items: bool, bounds: Any) -> Converter:
    item = _plan(item_tp, skip_items=False)

    def convert_list(value: Any, path: Path) -> Any:
        if type(value) is not list:
            raise _error(f"Expected `array`, got `{_kind(value)}`", path)
        out = []
        for index, entry in enumerate(value):
            try:
                out.append(item(entry, (*path, index)))
            except SchemaError:
                if not skip_items:
                    raise
        if bounds is not None:
            _check_length(bounds, out, path)
        return out

    return convert_list


def _check_length(bounds: Any, items: list[Any], path: Path) -> None:
    for meta in bounds.__metadata__:
        if isinstance(meta, msgspec.Meta):
            if meta.min_length is not None and len(items) < meta.min_length:
                raise _error(f"Expected `array` of length >= {meta.min_length}", path)
            if meta.max_length is not None and len(items) > meta.max_length:
                raise _error(f"Expected `array` of length <= {meta.max_length}", path)


def _dict(value_tp: Any) -> Converter:
    item = _plan(value_tp, skip_items=False)

    def convert_dict(value: Any, path: Path) -> Any:
        if type(value) is not dict:
            raise _error(f"Expected `object`, got `{_kind(value)}`", path)
        return {key: item(entry, (*path, key)) for key, entry in value.items()}

    return convert_dict


def _unknown(
    value: dict[str, Any], tag_field: str, other: type[msgspec.Struct] | None, path: Path
) -> UnknownVariant:
    """Keep an unknown variant, once it matches what every variant must carry."""
    if other is not None:
        _plan(other, skip_items=False)(value, path)
    return UnknownVariant(value, tag_field)


def _tagged(members: tuple[Any, ...], marker: OpenUnion | None) -> Converter:
    structs: tuple[type[msgspec.Struct], ...] = members
    tag_field = structs[0].__struct_config__.tag_field
    assert tag_field is not None
    by_tag = {m.__struct_config__.tag: m for m in structs}
    plans = {tag: _plan(m, skip_items=False) for tag, m in by_tag.items()}
    nested = {tag: _class_hints(m).nested for tag, m in by_tag.items()}
    other = marker.other if marker is not None else None

    def convert_tagged(value: Any, path: Path) -> Any:
        if type(value) is not dict:
            raise _error(f"Expected `object`, got `{_kind(value)}`", path)
        if tag_field not in value:
            raise _error(f"Object missing required field `{tag_field}`", path)
        tag = value[tag_field]
        convert_member = plans.get(tag) if isinstance(tag, str) else None
        if convert_member is None:
            if marker is not None and isinstance(tag, str):
                return _unknown(value, tag_field, other, path)
            raise _error(f"Invalid value {_short(tag)}", (*path, tag_field))
        inner = nested[tag]
        if inner is not None and value.get(inner.tag_field) not in inner.known:
            inner_tag = value.get(inner.tag_field)
            if marker is not None and inner.open and isinstance(inner_tag, str):
                # An unknown inner variant (v2 ``state_update`` with a new ``state``):
                # the whole object is kept, as an unknown variant of the outer union.
                return _unknown(value, tag_field, None, path)
        return convert_member(value, path)

    return convert_tagged


def _object_union(tp: type[ObjectUnion]) -> Converter:
    def convert_object_union(value: Any, path: Path) -> Any:
        d = _dispatch(tp)
        if type(value) is not dict:
            raise _error(f"Expected `object`, got `{_kind(value)}`", path)
        if d.tag_field is not None and d.tag_field in value:
            tag = value[d.tag_field]
            member = d.tagged.get(tag) if isinstance(tag, str) else None
            if member is not None:
                return _plan(member, skip_items=False)(value, path)
            if d.open and isinstance(tag, str):
                return _unknown(value, d.tag_field, d.other, path)
            if not d.untagged:
                raise _error(f"Invalid value {_short(tag)}", (*path, d.tag_field))
        elif not d.untagged:
            raise _error(f"Object missing required field `{d.tag_field}`", path)
        errors: list[SchemaError] = []
        for member in d.candidates(value):
            try:
                return _plan(member, skip_items=False)(value, path)
            except SchemaError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        names = ", ".join(f"`{m.__name__}`" for m, _ in d.untagged)
        raise _error(f"Object matches none of {names} ({errors[0].reason})", path)

    return convert_object_union


class _Field(NamedTuple):
    attr: str
    wire: str
    convert: Converter
    required: bool
    lenient: bool
    is_list: bool


def _struct(cls: type[msgspec.Struct]) -> Converter:
    config = cls.__struct_config__
    tag_field, tag = config.tag_field, config.tag
    fields: list[_Field] = []
    hints = _class_hints(cls)
    for f in msgspec.structs.fields(cls):
        required = f.required
        fields.append(
            _Field(
                attr=f.name,
                wire=f.encode_name,
                convert=_plan(f.type, skip_items=f.name in hints.skip_invalid_items),
                required=required,
                lenient=f.name in hints.default_on_error,
                is_list=_is_list_like(f.type),
            )
        )

    def convert_struct(value: Any, path: Path) -> Any:
        if type(value) is not dict:
            raise _error(f"Expected `object`, got `{_kind(value)}`", path)
        try:
            # Most of a message that failed is usually fine: convert valid
            # subtrees in one strict msgspec call, walk only the failing ones.
            return msgspec.convert(value, cls, dec_hook=dec_hook)
        except msgspec.ValidationError:
            pass
        if tag_field is not None and tag_field in value and value[tag_field] != tag:
            raise _error(f"Invalid value {_short(value[tag_field])}", (*path, tag_field))
        kwargs: dict[str, Any] = {}
        for f in fields:
            if f.wire in value:
                try:
                    kwargs[f.attr] = f.convert(value[f.wire], (*path, f.wire))
                except SchemaError:
                    if not f.lenient:
                        raise
                    if f.required:
                        # A required list falls back to its default, the empty list.
                        if not f.is_list:
                            raise
                        kwargs[f.attr] = []
            elif f.required:
                raise _error(f"Object missing required field `{f.wire}`", path)
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:  # __post_init__ checks
            raise _error(str(exc), path) from None

    return convert_struct
