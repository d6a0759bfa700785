"""Handler methods of class-based agents and clients: checked when the
subclass is defined.

Each ACP method is handled by one Python method that takes the whole typed
request (``async def new_session(self, request)``). A method written in
another style, the official Python SDK's keyword style (``async def
new_session(self, cwd, mcp_servers=None, **kwargs)``) say, would still be
called, with its first parameter bound to the request object: a silent
mis-binding. Defining such a subclass raises ``TypeError`` instead, naming
the method and the signature expected (docs/migration.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = ("check_handler_signatures",)

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_EXTENSIONS = ("ext_method", "ext_notification")


def check_handler_signatures(
    cls: type, base: type, table: Mapping[str, str], schema: ModuleType
) -> None:
    """Raise TypeError when ``cls`` overrides a handler of ``base`` with
    parameters the SDK cannot call it with as it means."""
    wire_of = {name: wire for wire, name in table.items()}
    for name, value in vars(cls).items():
        if name not in wire_of and name not in _EXTENSIONS:
            continue
        function = getattr(value, "__func__", value)  # a classmethod or staticmethod
        if not callable(function) or isinstance(value, (staticmethod, classmethod)):
            continue
        expected = _positional_count(getattr(base, name))
        problem = _problem(function, expected)
        if problem is None:
            continue
        raise TypeError(_message(cls, base, name, wire_of.get(name), schema, function, problem))


def _positional_count(function: Any) -> int:
    parameters = list(inspect.signature(function).parameters.values())[1:]
    return sum(1 for p in parameters if p.kind in _POSITIONAL)


def _problem(function: Any, expected: int) -> str | None:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None  # no signature to check (a C function, say)
    if parameters and parameters[0].kind in _POSITIONAL:
        parameters = parameters[1:]  # self
    kinds = {p.kind for p in parameters}
    if kinds <= {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} and (
        inspect.Parameter.VAR_POSITIONAL in kinds
    ):
        return None  # (*args, **kwargs): a generic wrapper, called as it should be
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    if len(positional) > expected:
        extra = ", ".join(p.name for p in positional[expected:])
        return f"it takes more than {expected} argument(s) besides self ({extra})"
    if len(positional) < expected and inspect.Parameter.VAR_POSITIONAL not in kinds:
        return f"it takes fewer than {expected} argument(s) besides self"
    required = [
        p.name
        for p in parameters
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if required:
        return f"it requires keyword arguments the SDK never passes ({', '.join(required)})"
    if inspect.Parameter.VAR_KEYWORD in kinds and expected == 1:
        return "it takes **kwargs, as in the keyword style: the SDK passes one request object"
    return None


def _message(
    cls: type,
    base: type,
    name: str,
    wire: str | None,
    schema: ModuleType,
    function: Any,
    problem: str,
) -> str:
    try:
        found = str(inspect.signature(function))
    except (TypeError, ValueError):
        found = "(...)"
    if wire is None:
        expected = "(self, method: str, params: Any)"
    else:
        info = schema.METHODS.get(wire)
        kind = None if info is None else (info.request or info.notification)
        request_type = f"{schema.__name__.rsplit('.', 1)[-1]}.{kind.__name__}" if kind else "Any"
        expected = f"(self, request: {request_type})"
    where = f" (handles `{wire}`)" if wire else ""
    return (
        f"{cls.__qualname__}.{name}{found}{where} cannot be called as {base.__name__} "
        f"calls it: {problem}. Expected: async def {name}{expected}. The request's fields "
        "are its attributes (request.cwd, request.mcp_servers): code written in the "
        "official Python SDK's keyword style (cwd, mcp_servers=None, **kwargs) takes the "
        "request object instead; see docs/migration.md."
    )
