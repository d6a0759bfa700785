"""Stage 1: read an ACP schema and its method table, drop prose, validate.

The input directory has the upstream layout::

    <dir>/v1/schema.json  schema.unstable.json  meta.json  meta.unstable.json  [VERSION]
    <dir>/v2/...

Everything that fails here stops the generator with an ``InputError`` whose message
names the file and the JSON path, before any code is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]  # no stubs in the toolchain
import jsonschema.exceptions  # type: ignore[import-untyped]

from codegen.overrides import PROSE_KEYWORDS

#: Keywords whose value maps *names* to schemas: their keys are never keywords.
_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
#: Keywords whose value is instance data, never a schema: not walked into.
_DATA_KEYWORDS: Final = frozenset({"const", "enum", "default", "examples", "required"})

Json = dict[str, Any]


class InputError(Exception):
    """The schema input is unusable; the message says where and why."""


@dataclass(frozen=True)
class SchemaInput:
    """One schema variant, ready for preprocessing."""

    #: ``"v1"`` or ``"v2"``.
    major: str
    #: ``True`` for ``schema.unstable.json`` + ``meta.unstable.json``.
    unstable: bool
    #: Upstream release, e.g. ``"1.21.0"``.
    release: str
    #: The schema with prose removed.
    schema: Json
    #: The method table (``meta*.json``).
    meta: Json

    @property
    def schema_file(self) -> str:
        return "schema.unstable.json" if self.unstable else "schema.json"

    @property
    def meta_file(self) -> str:
        return "meta.unstable.json" if self.unstable else "meta.json"


def strip_prose(node: Any) -> Any:
    """Return a copy of a JSON Schema node without prose keywords.

    Keys of name maps (``properties``, ``$defs``) are property/definition names and
    are kept even when they read ``description``; data (``const``, ``default``, ``x-*``
    annotations) is copied untouched.  Key order is preserved.
    """
    if isinstance(node, list):
        return [strip_prose(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: Json = {}
    for key, value in node.items():
        if key in PROSE_KEYWORDS:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: strip_prose(sub) for name, sub in value.items()}
        elif key in _DATA_KEYWORDS or key.startswith("x-"):
            out[key] = value
        else:
            out[key] = strip_prose(value)
    return out


def dump_json(data: Any) -> str:
    """The one JSON text layout used for files under ``schema/``."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON: {exc}") from None


def read_release(schema_dir: Path, major: str, fallback_dir: Path | None) -> str:
    """Read ``<dir>/<major>/VERSION``; upstream checkouts have none, so fall back."""
    for base in (schema_dir, fallback_dir):
        if base is None:
            continue
        path = base / major / "VERSION"
        if path.is_file():
            release = path.read_text(encoding="utf-8").strip()
            if release:
                return release
    raise InputError(f"{schema_dir / major / 'VERSION'}: missing; it names the upstream release")


def load(
    schema_dir: Path, major: str, *, unstable: bool, fallback_dir: Path | None = None
) -> SchemaInput:
    """Read, strip and validate one schema variant."""
    release = read_release(schema_dir, major, fallback_dir)
    probe = SchemaInput(major, unstable, release, {}, {})
    schema_path = schema_dir / major / probe.schema_file
    meta_path = schema_dir / major / probe.meta_file
    schema = strip_prose(read_json(schema_path))
    meta = read_json(meta_path)
    validate_schema(schema, schema_path)
    validate_meta(meta, meta_path)
    check_methods(schema, meta, schema_path)
    return SchemaInput(major, unstable, release, schema, meta)


def validate_schema(schema: Any, path: Path) -> None:
    """Check the schema against its meta-schema and that every ``$ref`` resolves."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        raise InputError(f"{path}: expected a JSON Schema object with `$defs`")
    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "<root>"
        raise InputError(
            f"{path}: not a valid JSON Schema ({validator.META_SCHEMA.get('$id', '?')}): "
            f"{exc.message[:300]} (at {where})"
        ) from None
    defs = schema["$defs"]
    for where, node in schema_nodes(schema):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.removeprefix("#/$defs/") not in defs:
            raise InputError(f"{path}: unresolvable $ref {ref!r} at {where}")


def schema_nodes(node: Any, where: str = "#") -> Iterator[tuple[str, Json]]:
    """Yield ``(json pointer, node)`` for every schema object inside ``node``."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from schema_nodes(item, f"{where}/{index}")
        return
    if not isinstance(node, dict):
        return
    yield where, node
    for key, value in node.items():
        if key in _DATA_KEYWORDS or key.startswith("x-"):
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from schema_nodes(sub, f"{where}/{key}/{name}")
        else:
            yield from schema_nodes(value, f"{where}/{key}")


_META_MAPS: Final = ("agentMethods", "clientMethods", "protocolMethods")


def validate_meta(meta: Any, path: Path) -> None:
    """``meta*.json`` is ``{version: int, agentMethods|clientMethods|protocolMethods: {id: wire}}``."""
    if not isinstance(meta, dict) or not isinstance(meta.get("version"), int):
        raise InputError(f"{path}: expected an object with an integer `version`")
    for key in _META_MAPS:
        table = meta.get(key)
        if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        ):
            raise InputError(f"{path}: `{key}` must map identifiers to wire method names")


def check_methods(schema: Json, meta: Json, path: Path) -> None:
    """Every ``x-method`` is in the method table and every table entry has a payload."""
    annotated = {
        s["x-method"] for s in schema["$defs"].values() if isinstance(s.get("x-method"), str)
    }
    listed = {wire for key in _META_MAPS for wire in meta[key].values()}
    if missing := sorted(annotated - listed):
        raise InputError(f"{path}: x-method not listed in the meta table: {missing}")
    if missing := sorted(listed - annotated):
        raise InputError(f"{path}: meta table lists methods without a payload: {missing}")
