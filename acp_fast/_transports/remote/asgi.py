"""The few ASGI shapes the server uses: typed aliases, plain responses, refusals."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio

__all__ = (
    "Receive",
    "Refused",
    "Scope",
    "Send",
    "cancel_on_disconnect",
    "encode_headers",
    "headers_of",
    "refuse_websocket",
    "respond",
)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Refused(Exception):
    """A request answered with ``status`` (and ``text``) instead of being served."""

    def __init__(self, status: int, text: str = "", headers: Iterable[tuple[str, str]] = ()):
        super().__init__(text)
        self.status = status
        self.text = text
        self.headers = list(headers)


async def cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


async def refuse_websocket(scope: Scope, send: Send, refused: Refused) -> None:
    extensions = scope.get("extensions") or {}
    if "websocket.http.response" in extensions:
        await send(
            {
                "type": "websocket.http.response.start",
                "status": refused.status,
                "headers": encode_headers(refused.headers),
            }
        )
        await send({"type": "websocket.http.response.body", "body": refused.text.encode()})
    else:
        await send({"type": "websocket.close", "code": 1008})


async def respond(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": encode_headers([*headers, ("content-length", str(len(body)))]),
        }
    )
    await send({"type": "http.response.body", "body": body})


def headers_of(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}


def encode_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
