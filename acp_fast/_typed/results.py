"""What a class-based handler returned, checked against its response type.

A handler that returns the wrong thing (``None`` from ``prompt``, a dict
missing a required field) must not reach the peer as a result that fails
there: the peer would see a confusing error far from the cause. The
answering side checks, logs the handler by name, and answers -32603 with a
message that says what was wrong (docs/semantics.md §1.3).
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

import msgspec

from .._async.messages import decode_value
from .._errors import Error, ErrorCode

__all__ = ("checked_result",)

log = logging.getLogger("acp_fast")


def checked_result(schema: ModuleType, owner: object, name: str, request: Any, result: Any) -> Any:
    """``result`` to answer ``request`` with, or the ``Error`` to answer
    instead when it does not fit the method's response type. ``owner.name``
    is the handler (``owner`` its instance), for the log and the message."""
    method = getattr(request, "METHOD", None)
    info = schema.METHODS.get(method) if method is not None else None
    response_type = None if info is None else info.response
    if response_type is None or not isinstance(response_type, type):
        return {} if result is None else result
    if isinstance(result, response_type):
        return result
    try:
        decode_value(response_type, result)
    except (msgspec.ValidationError, msgspec.DecodeError, TypeError) as exc:
        message = (
            f"{type(owner).__name__}.{name} returned {type(result).__name__}, which is not a valid "
            f"{response_type.__name__}: {exc}"
        )
        # The error's own message says it in short, hint first, so a peer
        # that shows ``str(error)`` (its data cut at 200 characters) shows it.
        summary = (
            f"{type(owner).__name__}.{name} returned {type(result).__name__}, not a valid "
            f"{response_type.__name__}"
        )
        if result is None:
            # The usual cause: a handler whose last line is not its return.
            hint = f" (does it end with `return {response_type.__name__}(...)`?)"
            message += hint
            summary = f"{type(owner).__name__}.{name} returned None{hint}"
        log.error("%s", message)
        return Error(
            ErrorCode.INTERNAL_ERROR,
            summary[:300],
            {"reason": "invalid_result", "method": method, "details": message[:1000]},
        )
    return {} if result is None else result
