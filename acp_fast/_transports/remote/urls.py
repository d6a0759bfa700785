"""A transport from a URL: ``http(s)://`` for Streamable HTTP, ``ws(s)://`` for WebSocket."""

from __future__ import annotations

from ..base import Transport
from .http_client import HttpTransport
from .ws_client import WebSocketTransport

__all__ = ("is_remote_url", "transport_for_url")


def is_remote_url(text: str) -> bool:
    return text.startswith(("http://", "https://", "ws://", "wss://"))


def transport_for_url(url: str) -> Transport:
    """The client transport ``url``'s scheme selects."""
    if url.startswith(("ws://", "wss://")):
        return WebSocketTransport(url)
    if url.startswith(("http://", "https://")):
        return HttpTransport(url)
    raise ValueError(f"not an http(s):// or ws(s):// URL: {url!r}")
