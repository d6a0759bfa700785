"""``HttpTransport``: a client connection over Streamable HTTP (POST + SSE).

The first message (``initialize``) is POSTed and answered in the response,
which names the connection (``Acp-Connection-Id``). From then on the
client's messages are POSTed one at a time, in order, and answered 202;
responses to the agent's requests go on a queue of their own, so they never
wait behind a POST that waits for them. The agent's messages arrive on
long-lived GET streams of Server-Sent Events: one for the connection,
opened right after ``initialize``, and one per session, opened before the
first message naming the session (and as soon as a result names a new one).
Closing the connection sends DELETE. docs/remote.md has the details.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ..._io.backend import Backend
from ..._io.channel import Channel
from ..base import Transport
from .channel import MessageChannel, spawn_free_standing
from .streams import Mailbox
from .wire import (
    CONNECTION_HEADER,
    SESSION_CREATING_METHODS,
    SESSION_HEADER,
    SseParser,
    decode,
    id_key,
    is_response,
    message_session,
)

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = ("HttpTransport",)

QUEUE_CAPACITY = 1024 * 1024


class HttpTransport(Transport):
    """Connect to an agent served over Streamable HTTP at ``url``.

    ``url`` is the endpoint itself (``http://host:8000/acp``). ``headers``
    go on every request (``{"Authorization": "Bearer ..."}``); ``cookies``,
    ``timeout`` (seconds, or an ``httpx.Timeout``; SSE streams have no read
    timeout) and ``verify`` (TLS: a bool, a CA path or an ``ssl.SSLContext``)
    are httpx's. ``client=`` passes an ``httpx.AsyncClient`` of your own
    instead (left open afterwards). A dropped stream or a failed POST ends
    the connection: every pending request fails with a clear error.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        cookies: Any = None,
        timeout: Any = 30.0,
        verify: Any = True,
        client: httpx.AsyncClient | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.cookies = cookies
        self.timeout = timeout
        self.verify = verify
        self.client = client
        self.max_message_bytes = max_message_bytes
        self.connection_id: str | None = None

    @asynccontextmanager
    async def _open(self, backend: Backend) -> AsyncIterator[Channel]:
        import httpx

        client = self.client
        own_client = client is None
        if client is None:
            verify = self.verify
            if verify is True:
                verify = _default_tls_context()
            client = httpx.AsyncClient(
                headers=self.headers,
                cookies=self.cookies,
                timeout=self.timeout,
                verify=verify,
            )
        else:
            client.headers.update(self.headers)
        link = _HttpLink(self, backend, client)
        try:
            link.start()
            yield link.channel
        finally:
            await link.channel.aclose()
            await link.aclose()
            if own_client:
                await client.aclose()

    def __repr__(self) -> str:
        return f"HttpTransport({self.url!r})"


class _Outbox:
    """The channel's sink: ordered messages and responses, queued apart."""

    def __init__(self, ordered: Mailbox, responses: Mailbox) -> None:
        self.ordered = ordered
        self.responses = responses
        self._blocked: Mailbox | None = None

    def offer(self, message: bytes) -> bool:
        mailbox = self.responses if is_response(decode(message)) else self.ordered
        if not mailbox.push(message):
            self._blocked = mailbox
            return False
        return True

    async def room(self) -> None:
        blocked, self._blocked = self._blocked, None
        if blocked is not None:
            await blocked.room()

    def end(self) -> None:
        self.ordered.end()
        self.responses.end()


class _HttpLink:
    """The tasks behind one HttpTransport connection."""

    def __init__(self, transport: HttpTransport, backend: Backend, client: httpx.AsyncClient):
        self.transport = transport
        self.backend = backend
        self.client = client
        self.url = transport.url
        self.ordered = Mailbox(backend, QUEUE_CAPACITY)
        self.responses = Mailbox(backend, QUEUE_CAPACITY)
        self.channel = MessageChannel(backend, _Outbox(self.ordered, self.responses))
        self.connection_id: str | None = None
        self.connected = anyio.Event()
        self.streams: dict[str | None, anyio.Event] = {}
        self.creating: dict[tuple[str, Any], str] = {}  # our request ids -> method
        self.session_of_request: dict[tuple[str, Any], str] = {}  # their ids -> session
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.closing = False
        self.ordered_sent = anyio.Event()
        self.responses_sent = anyio.Event()
        self._group: Any = None
        self._task: Any = None  # asyncio holds its tasks only weakly

    def start(self) -> None:
        self._task = spawn_free_standing(self.backend, self._run, "acp_fast http client")

    async def _run(self) -> None:
        try:
            with self.scope:
                async with anyio.create_task_group() as group:
                    self._group = group
                    group.start_soon(self._post_responses)
                    await self._post_ordered()
                    # Everything was sent: the streams go on until closed.
                    await anyio.sleep_forever()
        except Exception as exc:  # never let a free-standing task fail
            self.fail(f"the HTTP transport failed: {exc!r}")
        finally:
            self.done.set()

    def fail(self, reason: str) -> None:
        if not self.closing:
            self.channel.lose_input(reason)
        self.closing = True
        # Nothing posts any more: writes fail at once (ChannelError) instead
        # of filling the mailboxes and then waiting for room for ever.
        self.ordered.close()
        self.responses.close()
        self.scope.cancel()

    async def aclose(self) -> None:
        self.closing = True
        # What the connection wrote before closing still goes out.
        with anyio.move_on_after(_seconds(self.transport.timeout)):
            await self.ordered_sent.wait()
            if self.connected.is_set():
                await self.responses_sent.wait()
        self.scope.cancel()
        await self.done.wait()
        if self.connection_id is not None:
            with anyio.move_on_after(_seconds(self.transport.timeout), shield=True):
                try:
                    await self.client.delete(
                        self.url, headers={CONNECTION_HEADER: self.connection_id}
                    )
                except Exception:
                    pass  # the server forgets idle connections anyway

    # -- sending --------------------------------------------------------------

    async def _post_ordered(self) -> None:
        try:
            while True:
                items = await self.ordered.take()
                if items is None:
                    return
                for item in items:
                    if self.connection_id is None:
                        await self._initialize(item)
                    else:
                        await self._post(item, await self._session_header(item))
        finally:
            self.ordered_sent.set()

    async def _post_responses(self) -> None:
        try:
            await self.connected.wait()
            while True:
                items = await self.responses.take()
                if items is None:
                    return
                for item in items:
                    value = decode(item)
                    session = None
                    if isinstance(value, dict) and "id" in value:
                        # A request that came on a session stream is answered
                        # with that session's header (some servers insist).
                        session = self.session_of_request.pop(id_key(value["id"]), None)
                    await self._post(item, session)
        finally:
            self.responses_sent.set()

    async def _session_header(self, item: bytes) -> str | None:
        value = decode(item)
        session = message_session(value)
        if isinstance(value, dict) and isinstance(value.get("method"), str) and "id" in value:
            if value["method"] in SESSION_CREATING_METHODS:
                self.creating[id_key(value["id"])] = value["method"]
        if session is not None:
            await self._open_stream(session)
        return session

    async def _initialize(self, item: bytes) -> None:
        value = decode(item)
        if not (isinstance(value, dict) and value.get("method") == "initialize"):
            self.fail("over HTTP the first message must be an initialize request")
            return
        try:
            response = await self.client.post(
                self.url, content=item, headers={"content-type": "application/json"}
            )
        except Exception as exc:
            self.fail(f"POST initialize to {self.url} failed: {exc!r}")
            return
        if response.status_code != 200:
            self.fail(f"POST initialize: HTTP {response.status_code} {response.text[:200]}")
            return
        connection_id = response.headers.get(CONNECTION_HEADER)
        await self.channel.put(response.content)
        if connection_id is None:
            self.fail("the agent refused initialize: the connection is closed")
            return
        self.connection_id = self.transport.connection_id = connection_id
        await self._open_stream(None)
        self.connected.set()

    async def _post(self, item: bytes, session: str | None) -> None:
        assert self.connection_id is not None
        headers = {"content-type": "application/json", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
        try:
            response = await self.client.post(self.url, content=item, headers=headers)
        except Exception as exc:
            self.fail(f"POST to {self.url} failed: {exc!r}")
            return
        if not response.is_success:
            self.fail(f"POST: HTTP {response.status_code} {response.text[:200]}")

    # -- receiving ------------------------------------------------------------

    async def _open_stream(self, session: str | None) -> None:
        """Open the connection's (or a session's) stream; wait until it is."""
        established = self.streams.get(session)
        if established is None:
            established = self.streams[session] = anyio.Event()
            self._group.start_soon(self._read_stream, session, established)
        await established.wait()

    async def _read_stream(self, session: str | None, established: anyio.Event) -> None:
        import httpx

        assert self.connection_id is not None
        headers = {"accept": "text/event-stream", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
        what = "connection" if session is None else f"session {session!r}"
        timeout = httpx.Timeout(_seconds(self.transport.timeout), read=None)
        parser = SseParser(self.transport.max_message_bytes)
        try:
            async with self.client.stream(
                "GET", self.url, headers=headers, timeout=timeout
            ) as response:
                if response.status_code != 200:
                    self.fail(f"GET {what} stream: HTTP {response.status_code}")
                    return
                established.set()
                async for chunk in response.aiter_raw():
                    for event in parser.feed(chunk):
                        self._note_incoming(event, session)
                        await self.channel.put(event)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            self.fail(f"the {what} stream failed: {exc!r}")
            return
        self.fail(f"the {what} stream ended")

    def _note_incoming(self, event: bytes, session: str | None) -> None:
        if (not self.creating and session is None) or b'"id"' not in event:
            return  # nothing to note: most events are notifications
        value = decode(event)
        if not isinstance(value, dict) or "id" not in value:
            return
        key = id_key(value["id"])
        if is_response(value):
            if self.creating.pop(key, None) is not None:
                result = value.get("result")
                created = result.get("sessionId") if isinstance(result, dict) else None
                if isinstance(created, str) and created not in self.streams:
                    self.streams[created] = established = anyio.Event()
                    self._group.start_soon(self._read_stream, created, established)
        elif session is not None:
            self.session_of_request[key] = session


@functools.cache
def _default_tls_context() -> ssl.SSLContext:
    """The system's trust, loaded once: httpx would load it for every client
    (tens of milliseconds each), which dominates opening many connections."""
    import ssl

    return ssl.create_default_context()


def _seconds(timeout: Any) -> float:
    if isinstance(timeout, int | float):
        return float(timeout)
    connect = getattr(timeout, "connect", None)
    return float(connect) if isinstance(connect, int | float) else 30.0
