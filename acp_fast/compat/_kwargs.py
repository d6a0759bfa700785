"""Calling official-style handlers: a typed request becomes keyword arguments."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from .._errors import Error
from ._models import CompatModel, to_compat
from .exceptions import RequestError

__all__ = ("Forward", "request", "request_json")


class Forward:
    """Calls ``method`` with the fields of a received request as keywords.

    As in the official SDK, absent optional fields are passed as ``None`` and
    the entries of ``_meta`` as extra keywords; unlike it, a ``_meta`` entry
    never replaces a real parameter, and fields the handler's signature does
    not name (newer schema fields) are passed only when it takes
    ``**kwargs``.
    """

    __slots__ = ("_accepts", "_open", "_skip", "method")

    def __init__(self, method: Callable[..., Awaitable[Any]], skip: tuple[str, ...] = ()) -> None:
        self.method = method
        self._skip = frozenset(("field_meta", *skip))
        try:
            parameters = inspect.signature(method).parameters.values()
        except (TypeError, ValueError):  # a builtin or an odd callable: pass everything
            self._open = True
            self._accepts: frozenset[str] = frozenset()
        else:
            self._open = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
            self._accepts = frozenset(p.name for p in parameters)

    def keywords(self, message: CompatModel) -> dict[str, Any]:
        skip, accepts, open_ = self._skip, self._accepts, self._open
        tag = message.__compat_tag__
        kwargs = {
            attr: getattr(message, attr)
            for attr, _ in message.__compat_fields__
            if attr not in skip and attr != tag and (open_ or attr in accepts)
        }
        meta = getattr(message, "field_meta", None)
        if meta and open_:
            for key, value in meta.items():
                kwargs.setdefault(key, value)
        return kwargs

    async def __call__(self, request: Any) -> Any:
        return await self.method(**self.keywords(to_compat(request)))


async def request(sent: Awaitable[Any]) -> Any:
    """Await a sent request; errors from the peer are ``RequestError``."""
    try:
        value = await sent
    except RequestError:
        raise
    except Error as error:
        raise RequestError.from_error(error) from None
    return to_compat(value)


async def request_json(sent: Awaitable[Any]) -> Any:
    """``request`` for an untyped (extension) request: its result is plain
    JSON, with no generated classes to convert."""
    try:
        return await sent
    except RequestError:
        raise
    except Error as error:
        raise RequestError.from_error(error) from None
