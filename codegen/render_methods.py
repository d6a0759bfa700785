"""The tables at the end of each generated module.

* ``AGENT_METHODS`` / ``CLIENT_METHODS`` / ``PROTOCOL_METHODS``: ``meta*.json`` as is
  (identifier → wire method), grouped by the side that handles the method.
* ``METHODS``: wire method → ``MethodInfo`` (payload types, side, kind).
* ``_DECODE_HINTS``: what the lenient decoding pass needs (``x-deserialize-*``
  fields and nested tags), by class and attribute name.
"""

from __future__ import annotations

from collections.abc import Callable

from codegen.ir import ModuleIR

FieldMap = Callable[[str], dict[str, str]]


def _dict(entries: list[str]) -> str:
    return "{\n" + "".join(f"    {entry},\n" for entry in entries) + "}"


def _frozenset(items: list[str]) -> str:
    return "frozenset({" + ", ".join(repr(item) for item in items) + "})"


def render_tables(ir: ModuleIR, fields: FieldMap) -> str:
    """Module text for the tables (classes must be defined above it)."""
    parts = []
    for title, name, table in (
        ("the agent handles", "AGENT_METHODS", ir.agent_methods),
        ("the client handles", "CLIENT_METHODS", ir.client_methods),
        ("either side may send (``$/`` methods)", "PROTOCOL_METHODS", ir.protocol_methods),
    ):
        parts.append(
            f"#: Methods {title}: ``meta.json`` identifier → wire method.\n"
            f"{name}: Final[dict[str, str]] = "
            + _dict([f"{key!r}: {value!r}" for key, value in table.items()])
        )

    entries = []
    for m in ir.methods:
        args = [repr(m.method), repr(m.side)]
        for role in ("request", "response", "notification"):
            value = getattr(m, role)
            if value is not None:
                args.append(f"{role}={value}")
        entries.append(f"{m.method!r}: MethodInfo({', '.join(args)})")
    parts.append(
        "#: Every wire method of this schema: payload types and the side that handles it.\n"
        "METHODS: Final[dict[str, MethodInfo]] = " + _dict(entries)
    )

    def by_attr(table: dict[str, list[str]]) -> str:
        rows = []
        for cls, wires in table.items():
            attrs = fields(cls)
            rows.append(f"{cls}: {_frozenset([attrs[w] for w in wires])}")
        return _dict(rows)

    nested = [
        f"{cls}: NestedTag({spec.tag_field!r}, {_frozenset(list(spec.known))}, open={spec.open!r})"
        for cls, spec in ir.nested.items()
    ]
    parts.append(
        "#: Read by ``acp_fast.schema`` when a message fails the fast typed decode.\n"
        "_DECODE_HINTS: Final = DecodeHints(\n"
        f"    default_on_error={by_attr(ir.default_on_error)},\n"
        f"    skip_invalid_items={by_attr(ir.skip_invalid_items)},\n"
        f"    nested_tags={_dict(nested)},\n"
        ")"
    )
    return "\n\n\n".join(parts) + "\n"
