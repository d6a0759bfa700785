"""The class API's method tables and default methods, from the schemas' methods.

A class-based agent or client (``acp.BaseAgent``, ``acp.BaseClient`` and the
v2 pair) has one async method per wire method of its side. This stage renders
``acp_fast/_typed/methods.py`` from the stable v1 and v2 method lists:

* ``V1_AGENT_METHODS`` ... : wire method -> Python method name, for the
  endpoint that registers one handler per overridden method;
* ``V1_UNSTABLE_AGENT_METHODS`` ... : the same for a class that opts in to
  the v1 unstable schema (its stable and draft methods);
* ``AgentMethods`` / ``ClientMethods`` (and ``...V2``): one typed default per
  method, which answers -32601 (a request) or does nothing (a notification).
  The base classes inherit them and override the few with real defaults.

Python names are data: ``NAMES`` below, chosen to read naturally and to
match what users of the official Python SDK know. A schema method without a
name fails the generation, so a new protocol method is a decision, never a
silent omission.
"""

from __future__ import annotations

from typing import Final

from codegen.ir import Method, ModuleIR
from codegen.load import InputError

#: The generated module, relative to the repository root.
PATH: Final = "acp_fast/_typed/methods.py"

#: Wire method -> Python method name, for every version (a wire method keeps
#: its name across versions).
NAMES: Final = {
    "initialize": "initialize",
    "authenticate": "authenticate",
    "logout": "logout",
    "auth/login": "login",
    "auth/logout": "logout",
    "providers/list": "list_providers",
    "providers/set": "set_provider",
    "providers/disable": "disable_provider",
    "session/new": "new_session",
    "session/load": "load_session",
    "session/list": "list_sessions",
    "session/delete": "delete_session",
    "session/fork": "fork_session",
    "session/resume": "resume_session",
    "session/close": "close_session",
    "session/set_mode": "set_session_mode",
    "session/set_model": "set_session_model",
    "session/set_config_option": "set_session_config_option",
    "session/prompt": "prompt",
    "session/cancel": "cancel",
    "nes/start": "start_nes",
    "nes/suggest": "suggest_nes",
    "nes/accept": "accept_nes",
    "nes/reject": "reject_nes",
    "nes/close": "close_nes",
    "document/didOpen": "did_open_document",
    "document/didChange": "did_change_document",
    "document/didClose": "did_close_document",
    "document/didSave": "did_save_document",
    "document/didFocus": "did_focus_document",
    "session/request_permission": "request_permission",
    "session/update": "session_update",
    "fs/read_text_file": "read_text_file",
    "fs/write_text_file": "write_text_file",
    "terminal/create": "create_terminal",
    "terminal/output": "terminal_output",
    "terminal/release": "release_terminal",
    "terminal/wait_for_exit": "wait_for_terminal_exit",
    "terminal/kill": "kill_terminal",
    "mcp/connect": "connect_mcp",
    "mcp/disconnect": "disconnect_mcp",
    "elicitation/create": "create_elicitation",
    "elicitation/complete": "complete_elicitation",
    "mcp/message": "mcp_message",
}

#: Methods whose class-API form is written by hand, with no generated default
#: (v2's prompt answers with a stop reason of the prompt lifecycle).
HAND_WRITTEN: Final = frozenset({("v2", "agent", "session/prompt")})

#: Sides a class handles; ``$/`` protocol methods are the SDK's own.
_SIDES: Final = ("agent", "client")


def _name(method: str) -> str:
    try:
        return NAMES[method]
    except KeyError:
        raise InputError(
            f"the schema method {method!r} has no class-API name: add one to "
            "NAMES in codegen/class_api.py"
        ) from None


def _handled(ir: ModuleIR, side: str) -> list[Method]:
    return [m for m in ir.methods if m.side == side and (m.request or m.notification)]


def _table(name: str, methods: list[Method]) -> str:
    rows = "".join(f"    {m.method!r}: {_name(m.method)!r},\n" for m in methods)
    return f"{name}: Final = {{\n{rows}}}\n"


def _stub(version: str, m: Method) -> str:
    name = _name(m.method)
    if m.request is not None:
        params, result = f"{version}.{m.request}", f"{version}.{m.response}"
        return (
            f"    async def {name}(self, request: {params}) -> {result}:\n"
            f'        """Answer ``{m.method}``; the default answers -32601."""\n'
            f"        raise Error.method_not_found({m.method!r})\n"
        )
    return (
        f"    async def {name}(self, notification: {version}.{m.notification}) -> None:\n"
        f'        """Handle ``{m.method}``; the default does nothing."""\n'
    )


#: Extension methods (``_``-prefixed) reach every class through these two.
_EXTENSION_STUBS: Final = (
    "    async def ext_method(self, method: str, params: Any) -> Any:\n"
    '        """An extension request (``_``-prefixed method) with plain JSON params;\n'
    '        the default answers -32601."""\n'
    "        raise Error.method_not_found(method)\n",
    "    async def ext_notification(self, method: str, params: Any) -> None:\n"
    '        """An extension notification (``_``-prefixed method); the default does\n'
    '        nothing."""\n',
)


def _class(name: str, version: str, side: str, methods: list[Method]) -> str:
    stubs = [_stub(version, m) for m in methods if (version, side, m.method) not in HAND_WRITTEN]
    stubs += _EXTENSION_STUBS
    doc = (
        f'    """The {version} {side} methods with their default answers '
        f'(see ``acp.Base{side.title()}{"" if version == "v1" else "V2"}``)."""\n'
    )
    return f"class {name}:\n{doc}\n" + "\n".join(stubs)


def render(stable: dict[str, ModuleIR], unstable: dict[str, ModuleIR]) -> str:
    """The module text; ``stable``/``unstable`` are IRs by major (``v1``, ``v2``)."""
    v1, v2 = stable["v1"], stable["v2"]
    releases = ", ".join(f"{major} {ir.release}" for major, ir in sorted(stable.items()))
    parts = [
        f"# Generated by `python -m codegen` from the ACP schemas ({releases}). Do not edit.\n"
        '"""Which Python method of a class-based agent or client handles which wire method.\n\n'
        "Generated from the schemas' method tables, with the Python names of\n"
        "``codegen/class_api.py``. The classes hold one typed default per method: a\n"
        "request answers -32601 and a notification does nothing until a subclass\n"
        'overrides it.\n"""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import TYPE_CHECKING, Any, Final\n\n"
        "from .._errors import Error\n\n"
        "if TYPE_CHECKING:\n"
        "    from ..schema import v1, v2\n",
    ]
    names = []
    for version, ir in (("V1", v1), ("V2", v2)):
        for side in _SIDES:
            table = f"{version}_{side.upper()}_METHODS"
            names.append(table)
            parts.append(
                f"#: Handled by the {side} ({version.lower()}): wire method -> Python method.\n"
                + _table(table, _handled(ir, side))
            )
    # The draft methods, for a class that opts in to the unstable schema: its
    # side's stable and draft methods, and those either side handles.
    for side in _SIDES:
        table = f"V1_UNSTABLE_{side.upper()}_METHODS"
        names.append(table)
        methods = [m for m in unstable["v1"].methods if m.side in (side, "both")]
        parts.append(
            f"#: Handled by the {side} of the v1 unstable schema: wire method -> Python method.\n"
            + _table(table, methods)
        )
    classes = []
    for version, ir in (("v1", v1), ("v2", v2)):
        suffix = "" if version == "v1" else "V2"
        for side in _SIDES:
            cls = f"{side.title()}Methods{suffix}"
            classes.append(cls)
            parts.append(_class(cls, version, side, _handled(ir, side)))
    exported = ", ".join(repr(n) for n in sorted(names + classes))
    parts.insert(1, f"__all__ = ({exported})\n")
    return "\n\n".join(parts)


def check_names() -> None:
    """Raise ``InputError`` for a name used by two methods of one side."""
    seen: dict[str, str] = {}
    for method, name in NAMES.items():
        if name in seen and {method, seen[name]} != {"logout", "auth/logout"}:
            raise InputError(f"{method!r} and {seen[name]!r} share the Python name {name!r}")
        seen[name] = method
