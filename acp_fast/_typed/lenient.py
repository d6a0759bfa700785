"""Leniencies of the class-based agent towards imperfect clients.

Each one is listed in docs/migration.md ("Leniencies"):

* ``initialize`` with a legacy date-string ``protocolVersion`` (sent by
  clients that predate integer versions) negotiates version 1, as the other
  ACP SDKs do, instead of failing the handshake with -32602.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .._async.connection import ConnectionTo
from .._async.messages import NOT_HANDLED, UntypedMessage
from .._async.responder import Responder
from ..schema import convert
from .endpoint import Endpoint

__all__ = ("legacy_initialize",)


def legacy_initialize(
    endpoint: Endpoint,
) -> Callable[[UntypedMessage, Responder[Any], ConnectionTo[Any]], Awaitable[Any]]:
    """A handler for ``initialize`` that takes a string ``protocolVersion`` as 1.

    Registered before the typed handler; any other ``initialize`` passes on
    to it untouched.
    """

    async def handle(
        message: UntypedMessage, responder: Responder[Any], cx: ConnectionTo[Any]
    ) -> Any:
        params = message.params
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            return NOT_HANDLED
        request_type = endpoint.schema.METHODS["initialize"].request
        request = convert(request_type, {**params, "protocolVersion": 1})
        await endpoint._request_handler("initialize")(request, responder, cx)
        return None

    return handle
