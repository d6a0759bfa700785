"""Handler methods of class-based agents and clients: checked when the
subclass is defined.

Each ACP method is handled by one Python method that takes the whole typed
request (``async def new_session(self, request)``). A method written in
another style, the official Python SDK's keyword style (``async def
new_session(self, cwd, mcp_servers=None, **kwargs)``) say, would still be
called, with its first parameter bound to the request object: a silent
mis-binding. Defining such a subclass raises ``TypeError`` instead, naming
the method and the signature expected (docs/migration.md).

A handler written as a plain ``def`` is refused the same way: the SDK awaits
what a handler returns, so ``def prompt(self, request)`` would fail on every
request, long after the class was defined. A generic wrapper (``*args,
**kwargs``, or one made with ``functools.wraps`` around an ``async def``)
may return the coroutine itself and passes.

A new ``async def`` whose name is a handler's with one slip (a letter left
out, added or changed, or two neighbours swapped: ``new_sesion``), or a
handler's name in camelCase (``newSession``), is almost always that handler
misspelled: it would never be called, and the peer would get -32601. It gets
a warning naming the handler it resembles. A handler's name with more at
either end (``prompts``, ``set_session_model``) is a name of its own.
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ("HandlerNameWarning", "check_handler_signatures")

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_EXTENSIONS = ("ext_method", "ext_notification")


def check_handler_signatures(cls: type, base: type, table: Mapping[str, str]) -> None:
    """Raise TypeError when ``cls`` overrides a handler of ``base`` with
    parameters the SDK cannot call it with as it means."""
    wire_of = {name: wire for wire, name in table.items()}
    for name, value in vars(cls).items():
        if name not in wire_of and name not in _EXTENSIONS:
            _warn_if_misspelled(cls, base, name, value, [*wire_of, *_EXTENSIONS])
            continue
        function = getattr(value, "__func__", value)  # a classmethod or staticmethod
        if not callable(function) or isinstance(value, (staticmethod, classmethod)):
            continue
        default = getattr(base, name)
        if not _awaitable(function):
            raise TypeError(_not_async_message(cls, base, name, wire_of.get(name), function))
        problem = _problem(function, _positional_count(default))
        if problem is None:
            continue
        raise TypeError(_message(cls, base, name, wire_of.get(name), function, problem))


class HandlerNameWarning(UserWarning):
    """A method of an agent or client class looks like a misspelled handler."""


def _warn_if_misspelled(cls: type, base: type, name: str, value: Any, handlers: list[str]) -> None:
    if name.startswith("_") or hasattr(base, name) or not inspect.iscoroutinefunction(value):
        return
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    if snake in handlers:
        meant = snake
    else:
        close = [h for h in handlers if _one_slip(name, h)]
        if len(close) != 1:
            return
        meant = close[0]
    warnings.warn(
        f"{cls.__qualname__}.{name} is not a handler of {base.__name__}, so nothing "
        f"calls it: did you mean {meant}? (A helper of your own: name it "
        f"_{name} to keep this quiet.)",
        HandlerNameWarning,
        stacklevel=4,
    )


def _one_slip(name: str, handler: str) -> bool:
    """Whether ``name`` is ``handler`` with one letter left out, added, changed,
    or two neighbours swapped; but not ``handler`` with something added at
    either end (``prompts``, ``set_session_model``, ``new_session_id``):
    those are names of their own."""
    if name == handler or name.startswith(handler) or name.endswith(handler):
        return False
    if handler.startswith(name) or handler.endswith(name):
        return False  # a truncation (``prompt`` -> ``promp``) is a name of its own too
    if abs(len(name) - len(handler)) > 1:
        return False
    # Strip the common ends; what is left must be one slip.
    start = 0
    while start < min(len(name), len(handler)) and name[start] == handler[start]:
        start += 1
    end = 0
    while end < min(len(name), len(handler)) - start and name[-1 - end] == handler[-1 - end]:
        end += 1
    a, b = name[start : len(name) - end], handler[start : len(handler) - end]
    if len(a) <= 1 and len(b) <= 1:
        return True  # one letter left out, added or changed
    return len(a) == len(b) == 2 and a == b[::-1]  # two neighbours swapped


def _awaitable(function: Any) -> bool:
    """False for a plain ``def`` (or an async generator) that the SDK would
    await in vain; True for what it can await, or cannot tell."""
    if not inspect.isfunction(function):
        return True  # a C function or a callable object: not ours to judge
    if inspect.iscoroutinefunction(function):
        return True
    if inspect.iscoroutinefunction(inspect.unwrap(function)):
        return True  # functools.wraps around an async def
    try:
        parameters = list(inspect.signature(function, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return True
    if parameters and parameters[0].kind in _POSITIONAL:
        parameters = parameters[1:]  # self
    kinds = {p.kind for p in parameters}
    # (self, *args, **kwargs): a generic wrapper that may return a coroutine.
    return inspect.Parameter.VAR_POSITIONAL in kinds and kinds <= {
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    }


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


def _found(function: Any) -> str:
    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):
        return "(...)"


def _expected(base: type, name: str) -> str:
    """The base's own declaration of ``name``, as an example to copy:
    ``async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse``."""
    signature = inspect.signature(getattr(base, name))
    # The annotations are strings (postponed evaluation): shown unquoted.
    parameters = ", ".join(
        p.name if p.annotation is inspect.Parameter.empty else f"{p.name}: {p.annotation}"
        for p in signature.parameters.values()
    )
    returns = signature.return_annotation
    tail = "" if returns is inspect.Signature.empty else f" -> {returns}"
    return f"async def {name}({parameters}){tail}"


def _not_async_message(cls: type, base: type, name: str, wire: str | None, function: Any) -> str:
    where = f" (handles `{wire}`)" if wire else ""
    kind = "an async generator" if inspect.isasyncgenfunction(function) else "a plain `def`"
    return (
        f"{cls.__qualname__}.{name}{_found(function)}{where} is {kind}: "
        f"{base.__name__} awaits every handler, so it must be an `async def`. "
        f"Expected: {_expected(base, name)}"
    )


def _message(
    cls: type,
    base: type,
    name: str,
    wire: str | None,
    function: Any,
    problem: str,
) -> str:
    where = f" (handles `{wire}`)" if wire else ""
    fields = _request_fields(base, name)
    attributes = ", ".join(f"request.{field}" for field in fields) or "request.session_id"
    keywords = ", ".join(fields) or "session_id"
    return (
        f"{cls.__qualname__}.{name}{_found(function)}{where} cannot be called as "
        f"{base.__name__} calls it: {problem}. Expected: {_expected(base, name)}. The "
        f"request's fields are its attributes ({attributes}): code written in the "
        f"official Python SDK's keyword style ({keywords}, **kwargs) takes the request "
        "object instead; see docs/migration.md."
    )


def _request_fields(base: type, name: str) -> list[str]:
    """The first fields of the request type ``base.name`` takes, for the
    example in a message (none when it cannot tell)."""
    from ..schema import v1, v2

    function = getattr(base, name)
    # The bases import the schema modules for type checking only.
    namespace = {**getattr(function, "__globals__", {}), "v1": v1, "v2": v2}
    try:
        hints = typing.get_type_hints(function, globalns=namespace)
    except Exception:  # an annotation that does not resolve: no example
        return []
    request = next((hint for key, hint in hints.items() if key != "return"), None)
    fields = getattr(request, "__struct_fields__", ())
    return [field for field in fields if field != "meta"][:2]
