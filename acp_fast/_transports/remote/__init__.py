"""Remote transports: ACP over Streamable HTTP (with SSE) and WebSocket.

* ``server``: the ASGI application behind ``acp_fast.http.AcpApp``;
* ``http_client``: ``HttpTransport``, a client over POST + SSE (httpx);
* ``ws_client``: ``WebSocketTransport``, a client over a WebSocket (websockets' sans-I/O protocol);
* ``wire``, ``channel``, ``streams``: what they share.

The libraries are an optional extra (``pip install 'acp-fast[http]'``),
imported only when a remote transport is opened or served.
"""

from __future__ import annotations
