"""Stage 4: datamodel-code-generator's module + the IR → the final module text.

datamodel-code-generator's output is parsed with ``ast``; class bodies (fields,
types, wire names) are kept as written, everything else comes from the IR:

* class keywords ``tag_field``/``tag`` and object-union marker bases;
* ``METHOD``/``SIDE``/``RESPONSE`` class variables and short docstrings;
* ``__post_init__`` branch checks of merged unions;
* open tagged unions as a ``TYPE_CHECKING`` pair: type checkers see
  ``A | B | UnknownVariant``, msgspec sees ``Annotated[A | B, OpenUnion(...)]``;
* the tables of ``render_methods``.

Definitions are ordered so that each one follows what it needs when the module
runs (bases, aliases, ``RESPONSE`` values); annotations are lazy
(``from __future__ import annotations``) and impose no order.  Ties keep the
upstream order, so related definitions stay together.
"""

from __future__ import annotations

import ast
import heapq
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from codegen import naming
from codegen.formatting import ruff_format
from codegen.ir import Method, ModuleIR, Union
from codegen.load import InputError
from codegen.preprocess import Prepared
from codegen.render_methods import render_tables

_SIDES: Final = {
    "agent": "handled by the agent",
    "client": "handled by the client",
    "protocol": "a protocol-level message either side may send",
    "both": "handled by either side",
}

#: Names the module may import, by source.
_IMPORTS: Final = (
    ("typing", ("TYPE_CHECKING", "Annotated", "Any", "ClassVar", "Final", "Literal", "TypeAlias")),
    ("msgspec", ("UNSET", "Meta", "UnsetType", "field")),
    (
        "acp_fast.schema._base",
        (
            "Base",
            "DecodeHints",
            "MethodInfo",
            "NestedTag",
            "ObjectUnion",
            "OpenUnion",
            "Request",
            "RequestUnion",
            "UnionSpec",
            "UnknownVariant",
            "check_branches",
        ),
    ),
)


@dataclass
class _Definition:
    name: str
    statements: list[ast.stmt]
    #: Module-level names needed when the definition runs.
    needs: set[str] = field(default_factory=set)


@dataclass
class _Source:
    """datamodel-code-generator's module, taken apart."""

    classes: dict[str, ast.ClassDef]
    aliases: dict[str, ast.expr]

    def fields(self, cls: str) -> dict[str, str]:
        """Wire name → attribute of a class's own fields."""
        out: dict[str, str] = {}
        for stmt in self.classes[cls].body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                attr = stmt.target.id
                out[_wire_name(stmt) or attr] = attr
        return out

    def all_fields(self, cls: str) -> dict[str, str]:
        """Wire name → attribute, inherited fields included."""
        out: dict[str, str] = {}
        for base in self.classes[cls].bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                out.update(self.all_fields(base.id))
        out.update(self.fields(cls))
        return out


def _wire_name(stmt: ast.AnnAssign) -> str | None:
    value = stmt.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "field"
    ):
        for kw in value.keywords:
            if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
    return None


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        new = self.names.get(node.id)
        return ast.copy_location(ast.Name(new, node.ctx), node) if new else node


def _parse(source: str) -> _Source:
    tree = ast.parse(source)
    renames: dict[str, str] = {}
    classes: dict[str, ast.ClassDef] = {}
    aliases: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "builtins":
            # It imports ``list as list_aliased`` against shadowing; the renderer
            # qualifies shadowed builtins itself, only where a class needs it.
            renames.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.Import | ast.ImportFrom):
            continue
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.value is not None
        ):
            aliases[node.target.id] = node.value
        else:
            raise InputError(f"unexpected statement in generated code: {ast.unparse(node)[:80]}")
    renamer = _Rename(renames)
    for cls in classes.values():
        renamer.visit(cls)
    aliases = {name: renamer.visit(expr) for name, expr in aliases.items()}
    return _Source(classes, aliases)


def _docstring(text: str) -> ast.Expr:
    """A class docstring wrapped to the line length (class bodies are indented once)."""
    paragraphs = [textwrap.fill(p, width=88) for p in text.split("\n\n")]
    body = "\n\n".join(paragraphs).replace("\n", "\n    ")
    if "\n" in body:
        body += "\n    "
    return ast.Expr(ast.Constant(body))


def _stmts(code: str) -> list[ast.stmt]:
    return ast.parse(code).body


def _names(node: ast.AST | Iterable[ast.AST]) -> set[str]:
    nodes = [node] if isinstance(node, ast.AST) else list(node)
    return {n.id for root in nodes for n in ast.walk(root) if isinstance(n, ast.Name)}


class Renderer:
    """Assembles one module from ``Prepared`` and datamodel-code-generator's output."""

    def __init__(self, prepared: Prepared, dcg_source: str) -> None:
        self.ir: ModuleIR = prepared.ir
        self.order = prepared.order
        self.src = _parse(dcg_source)
        self.src.aliases.pop("Model", None)  # its root model; the root is not a message
        got = set(self.src.classes) | set(self.src.aliases)
        if missing := sorted(set(self.order) - got):
            raise InputError(f"datamodel-code-generator did not define {missing}")
        if extra := sorted(got - set(self.order)):
            raise InputError(f"datamodel-code-generator invented {extra}; hoist them in preprocess")
        self.roles = self._roles()

    def _roles(self) -> dict[str, tuple[str, Method]]:
        roles: dict[str, tuple[str, Method]] = {}
        for method in self.ir.methods:
            for role in ("request", "response", "notification"):
                name = getattr(method, role)
                if name is not None:
                    roles[name] = (role, method)
        return roles

    # -- definitions ----------------------------------------------------------------

    def definitions(self) -> list[_Definition]:
        out = []
        for name in self.order:
            union = self.ir.unions.get(name)
            if union is not None and union.kind == "object":
                out.append(self.marker(union))
            elif name in self.src.classes:
                out.append(self.struct(name, self.src.classes[name]))
            elif union is not None and union.open:
                out.append(self.open_alias(union, self.src.aliases[name]))
            else:
                value = self.src.aliases[name]
                stmt = ast.AnnAssign(ast.Name(name), ast.Name("TypeAlias"), value, simple=1)
                out.append(_Definition(name, [stmt], _names(value)))
        return out

    def docstring(self, name: str) -> str | None:
        role = self.roles.get(name)
        if role is not None:
            kind, m = role
            side = _SIDES.get(m.side, f"x-side {m.side!r}")
            if kind == "request":
                return f"Params of the ``{m.method}`` request ({side}); the result is ``{m.response}``."
            if kind == "response":
                return f"Result of the ``{m.method}`` request ({side})."
            return f"Params of the ``{m.method}`` notification ({side})."
        return self.ir.notes.get(name)

    def method_vars(self, name: str) -> list[ast.stmt]:
        role = self.roles.get(name)
        if role is None:
            return []
        kind, m = role
        lines = [f"METHOD: ClassVar[str] = {m.method!r}", f"SIDE: ClassVar[str] = {m.side!r}"]
        if kind == "request" and m.response is not None:
            if m.response in self.src.classes or self._is_marker(m.response):
                lines.append(f"RESPONSE: ClassVar[type[{m.response}]] = {m.response}")
            else:
                lines.append(f"RESPONSE: ClassVar[Any] = {m.response}")
        return _stmts("\n".join(lines))

    def _is_marker(self, name: str) -> bool:
        union = self.ir.unions.get(name)
        return union is not None and union.kind == "object"

    def struct(self, name: str, node: ast.ClassDef) -> _Definition:
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        if len(bases) != 1:
            raise InputError(f"{name}: expected exactly one base, got {ast.unparse(node)[:80]}")
        bases += self.ir.union_bases.get(name, [])
        node.bases = [ast.Name(base) for base in bases]
        role = self.roles.get(name)
        if role is not None and role[0] == "request" and role[1].response:
            # A request class names its result type in its base, so that
            # ``cx.send_request(InitializeRequest(...))`` is typed by it.
            node.bases[0] = ast.Subscript(ast.Name("Request"), ast.Name(role[1].response))
        keywords = [kw for kw in node.keywords if kw.arg == "kw_only"]
        if name in self.ir.tags:
            tag_field, tag = self.ir.tags[name]
            keywords += [
                ast.keyword("tag_field", ast.Constant(tag_field)),
                ast.keyword("tag", ast.Constant(tag)),
            ]
        node.keywords = keywords
        fields = [s for s in node.body if not isinstance(s, ast.Pass | ast.Expr)]
        body: list[ast.stmt] = []
        if doc := self.docstring(name):
            body.append(_docstring(doc))
        body += self.method_vars(name)
        body += fields
        body += self.post_init(name)
        node.body = body or [ast.Pass()]
        self._qualify_builtins(node)
        needs = set(bases)
        if role is not None and role[0] == "request" and role[1].response:
            needs.add(role[1].response)
        return _Definition(name, [node], needs)

    def post_init(self, name: str) -> list[ast.stmt]:
        spec = self.ir.branches.get(name)
        if spec is None:
            return []
        attrs = self.src.all_fields(name)

        def attr(wire: str) -> str:
            if wire not in attrs:
                raise InputError(f"{name}: branch field {wire!r} is not a field")
            return attrs[wire]

        table = {
            tag: tuple(tuple(attr(w) for w in alt) for alt in alternatives)
            for tag, alternatives in spec.required.items()
        }
        tag_attr = None if spec.tag_field is None else attr(spec.tag_field)
        return _stmts(
            "_BRANCHES: ClassVar[dict[str | None, tuple[tuple[str, ...], ...]]] = "
            f"{table!r}\n"
            "def __post_init__(self) -> None:\n"
            '    """Merged from a union: one branch\'s fields must all be present."""\n'
            f"    check_branches(self, {tag_attr!r}, self._BRANCHES)\n"
        )

    def _qualify_builtins(self, node: ast.ClassDef) -> None:
        """A field named like a builtin shadows it in later annotations of its class."""
        own = {
            s.target.id
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        }
        for attr in own:
            naming.check_attribute(attr)
        shadowed = own & naming.BUILTIN_NAMES
        if not shadowed:
            return

        class Qualify(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                if n.id in shadowed:
                    return ast.copy_location(ast.Attribute(ast.Name("builtins"), n.id), n)
                return n

        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign):
                stmt.annotation = Qualify().visit(stmt.annotation)

    def marker(self, union: Union) -> _Definition:
        members = tuple(v.cls for v in union.variants)
        spec = f"UnionSpec({union.tag_field!r}, {members!r}, open={union.open!r}, other={union.other!r})"
        doc = "One of " + ", ".join(f"``{m}``" for m in members) + "."
        if union.open:
            doc += " Unknown variants decode as ``UnknownVariant``."
        if method_doc := self.docstring(union.name):
            doc = method_doc + "\n\n" + doc
        role = self.roles.get(union.name)
        is_request = role is not None and role[0] == "request" and bool(role[1].response)
        # A request payload that is a union names its result type too, so
        # each member is typed like any other request class.
        base = f"RequestUnion[{role[1].response}]" if role and is_request else "ObjectUnion"
        (node,) = _stmts(f"class {union.name}({base}):\n    __slots__ = ()")
        assert isinstance(node, ast.ClassDef)
        node.body = [
            _docstring(doc),
            *node.body,
            *_stmts(f"__acp_union__: ClassVar[UnionSpec] = {spec}"),
            *self.method_vars(union.name),
        ]
        needs: set[str] = set()
        if role is not None and is_request:
            needs.add(str(role[1].response))
        return _Definition(union.name, [node], needs)

    def open_alias(self, union: Union, value: ast.expr) -> _Definition:
        known = ast.unparse(value)
        other = f", {union.other}" if union.other else ""
        code = (
            "if TYPE_CHECKING:\n"
            f"    {union.name}: TypeAlias = {known} | UnknownVariant\n"
            "else:\n"
            f"    {union.name} = Annotated[{known}, OpenUnion({union.tag_field!r}{other})]\n"
        )
        needs = _names(value) | ({union.other} if union.other else set())
        return _Definition(union.name, _stmts(code), needs)

    # -- module ------------------------------------------------------------------------

    def ordered(self, defs: list[_Definition]) -> list[_Definition]:
        """Topological order, upstream order among the ready definitions."""
        index = {d.name: i for i, d in enumerate(defs)}
        by_name = {d.name: d for d in defs}
        waiting = {d.name: {n for n in d.needs if n in index and n != d.name} for d in defs}
        users: dict[str, list[str]] = {}
        for name, needs in waiting.items():
            for need in needs:
                users.setdefault(need, []).append(name)
        ready = [index[n] for n, needs in waiting.items() if not needs]
        heapq.heapify(ready)
        out = []
        while ready:
            d = defs[heapq.heappop(ready)]
            out.append(d)
            for user in users.get(d.name, ()):
                waiting[user].discard(d.name)
                if not waiting[user]:
                    heapq.heappush(ready, index[user])
        if len(out) != len(defs):
            stuck = sorted(set(by_name) - {d.name for d in out})
            raise InputError(f"circular definitions: {stuck}")
        return out

    def module(self) -> str:
        ir = self.ir
        defs = self.ordered(self.definitions())
        body = "\n\n".join(ast.unparse(s) for d in defs for s in d.statements)
        tables = render_tables(ir, self.src.all_fields)
        used = _names(ast.parse(body + "\n" + tables))
        stability = "unstable (draft) methods included" if ir.unstable else "stable methods"
        schema_file = "schema.unstable.json" if ir.unstable else "schema.json"
        meta_file = "meta.unstable.json" if ir.unstable else "meta.json"
        header = [
            f"# Generated by `python -m codegen` from the ACP {ir.major} schema {ir.release} "
            f"({schema_file} + {meta_file}). Do not edit.",
            f'"""Typed messages of the Agent Client Protocol {ir.major} (schema {ir.release}), '
            f"{stability}.",
            "",
            "One ``msgspec.Struct`` per schema definition; decode and encode them with",
            "``acp_fast.schema.decode`` / ``encode``.  Payload classes carry ``METHOD``, ``SIDE``",
            "and, for requests, ``RESPONSE``; ``METHODS`` maps wire methods to their types.",
            "",
            "Open unions come in ``if TYPE_CHECKING`` pairs: type checkers see the known",
            "variants plus ``UnknownVariant``; msgspec sees the known variants only, marked",
            "``OpenUnion`` for the lenient pass that keeps unknown ones.  Unions msgspec cannot",
            "decode natively are ``ObjectUnion`` marker classes that their members inherit.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
        ]
        # Standard library, msgspec, then acp_fast: one block each, as isort has them.
        blocks: list[list[str]] = [["import builtins"] if "builtins" in used else [], [], []]
        for block, (module, names) in zip(blocks, _IMPORTS, strict=True):
            wanted = [n for n in names if n in used]
            if wanted:
                block.append(f"from {module} import {', '.join(wanted)}")
        for block in blocks:
            if block:
                header += [*block, ""]
        header += [
            "#: The ``protocolVersion`` these messages belong to.",
            f"PROTOCOL_VERSION: Final = {ir.protocol_version}",
            "#: The upstream schema release they were generated from.",
            f"SCHEMA_VERSION: Final = {ir.release!r}",
            "",
        ]
        text = "\n".join(header) + "\n" + body + "\n\n" + tables
        return ruff_format(text)


def render(prepared: Prepared, dcg_source: str) -> str:
    """The final module text (formatted)."""
    return Renderer(prepared, dcg_source).module()
