"""The server's wire protocol and its defences, tried from outside over real HTTP.

Each test talks to uvicorn on loopback with plain httpx requests (or a raw
WebSocket handshake), the way a foreign client or an attacker would
(docs/remote.md: protocol, security). Every test that serves runs under both of
uvicorn's HTTP/1.1 parsers: httptools (the ``http`` extra) and h11 (what
uvicorn falls back to without it).
"""

from __future__ import annotations

import fractions
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

import acp_fast as acp
from acp_fast.http import AcpApp
from tests.remote.agent import RecordingClient, RemoteTestAgent

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
NEW = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}


def prompt(request_id: int, text: str, session: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"prompt": [{"type": "text", "text": text}]}
    if session is not None:
        params["sessionId"] = session
    return {"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": params}


@pytest.fixture(params=["httptools", "h11"])
def serve_app(request: pytest.FixtureRequest, serve_app: Any) -> Any:
    def start(app: Any = None, **options: Any) -> str:
        return str(serve_app(app, http=request.param, **options))

    return start


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


def initialize(http: httpx.Client, base: str, **headers: str) -> str:
    response = http.post(base + "/acp", json=INIT, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["protocolVersion"] == 1
    return response.headers["acp-connection-id"]


def events(stream: httpx.Response) -> Iterator[Any]:
    for line in stream.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def test_health(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    response = http.get(base + "/health")
    assert (response.status_code, response.text) == (200, "ok")


def test_initialize_names_an_unguessable_connection(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    ids = {initialize(http, base) for _ in range(5)}
    assert len(ids) == 5
    for connection_id in ids:
        assert len(connection_id) >= 22  # url-safe base64: >= 128 random bits


def test_a_session_over_sse(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    cid = initialize(http, base)
    headers = {"acp-connection-id": cid, "accept": "text/event-stream"}
    with http.stream("GET", base + "/acp", headers=headers) as connection_stream:
        assert connection_stream.status_code == 200
        assert connection_stream.headers["content-type"].startswith("text/event-stream")
        assert (
            http.post(base + "/acp", json=NEW, headers={"acp-connection-id": cid}).status_code
            == 202
        )
        reply = next(events(connection_stream))
        session = reply["result"]["sessionId"]
        with http.stream(
            "GET", base + "/acp", headers={**headers, "acp-session-id": session}
        ) as session_stream:
            # The session header alone scopes the prompt: sessionId is injected.
            posted = http.post(
                base + "/acp",
                json=prompt(2, "many 3"),
                headers={"acp-connection-id": cid, "acp-session-id": session},
            )
            assert posted.status_code == 202
            received = []
            for message in events(session_stream):
                received.append(message)
                if message.get("id") == 2:
                    break
    assert [m["params"]["update"]["content"]["text"] for m in received[:-1]] == ["0 ", "1 ", "2 "]
    assert received[-1]["result"]["stopReason"] == "end_turn"
    assert http.delete(base + "/acp", headers={"acp-connection-id": cid}).status_code == 202
    gone = http.post(base + "/acp", json=NEW, headers={"acp-connection-id": cid})
    assert gone.status_code == 404


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (NEW, {}, 400),  # no connection header
        (NEW, {"acp-connection-id": "made-up"}, 404),
        (prompt(3, "hi"), {}, 400),  # session method: no session at all
        (prompt(3, "hi", "s-1"), {"acp-session-id": "s-2"}, 400),  # mismatch
        ([INIT], {}, 501),  # batches
    ],
)
def test_bad_posts_are_refused(
    serve_app: Any, http: httpx.Client, body: Any, headers: dict[str, str], status: int
) -> None:
    base = serve_app()
    cid = initialize(http, base)
    if headers.get("acp-connection-id") != "made-up" and (headers or "sessionId" in str(body)):
        headers = {"acp-connection-id": cid, **headers}
    if isinstance(body, dict) and body["method"] == "session/prompt" and not headers:
        headers = {"acp-connection-id": cid}
    response = http.post(base + "/acp", json=body, headers=headers)
    assert response.status_code == status, response.text


def test_content_type_and_accept_are_checked(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    response = http.post(
        base + "/acp", content=json.dumps(INIT), headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415
    cid = initialize(http, base)
    assert http.get(base + "/acp", headers={"acp-connection-id": cid}).status_code == 406


def test_oversized_messages_get_413(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app(max_message_bytes=1000)
    cid = initialize(http, base)
    big = {"jsonrpc": "2.0", "id": 5, "method": "_t/echo", "params": {"x": "y" * 2000}}
    response = http.post(base + "/acp", json=big, headers={"acp-connection-id": cid})
    assert response.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        data = json.dumps(big).encode()
        for start in range(0, len(data), 100):
            yield data[start : start + 100]

    response = http.post(
        base + "/acp",
        content=chunks(),
        headers={"acp-connection-id": cid, "content-type": "application/json"},
    )
    assert response.status_code == 413


def test_a_second_subscriber_gets_409(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    cid = initialize(http, base)
    headers = {"acp-connection-id": cid, "accept": "text/event-stream"}
    with http.stream("GET", base + "/acp", headers=headers) as first:
        assert first.status_code == 200
        assert http.get(base + "/acp", headers=headers).status_code == 409


def test_an_agent_refusing_initialize_leaves_no_connection(
    serve_app: Any, http: httpx.Client
) -> None:
    app = AcpApp(lambda: acp.Agent.builder())  # answers initialize: method not found
    base = serve_app(app)
    response = http.post(base + "/acp", json=INIT)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32601
    assert "acp-connection-id" not in response.headers


def test_host_and_origin_are_checked(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    # DNS rebinding: a page of evil.example resolving to 127.0.0.1.
    response = http.post(base + "/acp", json=INIT, headers={"host": "evil.example"})
    assert response.status_code == 421
    response = http.post(base + "/acp", json=INIT, headers={"origin": "http://evil.example"})
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers
    assert http.post(base + "/acp", json=INIT, headers={"host": "localhost:1"}).status_code == 200


def test_cors_is_closed_unless_opened(serve_app: Any, http: httpx.Client) -> None:
    preflight = {
        "origin": "http://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    closed = serve_app()
    assert http.options(closed + "/acp", headers=preflight).status_code == 403
    opened = serve_app(cors_origins=["http://app.example"])
    response = http.options(opened + "/acp", headers=preflight)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "http://app.example"
    posted = http.post(opened + "/acp", json=INIT, headers={"origin": "http://app.example"})
    assert posted.status_code == 200
    assert "acp-connection-id" in posted.headers["access-control-expose-headers"]


def test_bearer_token(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app(token="s3cret")
    assert http.post(base + "/acp", json=INIT).status_code == 401
    wrong = http.post(base + "/acp", json=INIT, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"] == "Bearer"
    initialize(http, base, authorization="Bearer s3cret")


def test_a_connection_belongs_to_its_creator(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app()
    cid = initialize(http, base, authorization="Bearer alice")
    headers = {"acp-connection-id": cid, "authorization": "Bearer mallory"}
    assert http.post(base + "/acp", json=NEW, headers=headers).status_code == 404
    assert http.delete(base + "/acp", headers=headers).status_code == 404
    headers["authorization"] = "Bearer alice"
    assert http.post(base + "/acp", json=NEW, headers=headers).status_code == 202


def test_idle_connections_expire(serve_app: Any, http: httpx.Client) -> None:
    app = AcpApp(RemoteTestAgent, idle_timeout=0.2, close_grace=0.1)
    base = serve_app(app)
    cid = initialize(http, base)
    deadline = time.monotonic() + 10
    while cid in app.connections and time.monotonic() < deadline:
        time.sleep(0.05)  # no request meanwhile: that would be activity
    assert cid not in app.connections
    assert http.post(base + "/acp", json=NEW, headers={"acp-connection-id": cid}).status_code == 404


def test_a_client_that_stops_reading_cannot_grow_the_buffer(
    serve_app: Any, http: httpx.Client
) -> None:
    capacity = 4096
    app = AcpApp(RemoteTestAgent, max_buffered_bytes=capacity)
    base = serve_app(app)
    cid = initialize(http, base)
    headers = {"acp-connection-id": cid}
    with http.stream("GET", base + "/acp", headers={**headers, "accept": "text/event-stream"}) as s:
        http.post(base + "/acp", json=NEW, headers=headers)
        session = next(events(s))["result"]["sessionId"]
    count = 2000  # about 300 kB of updates, nobody reading them yet
    http.post(base + "/acp", json=prompt(2, f"many {count}", session), headers=headers)
    streams = app.connections[cid].streams
    deadline = time.monotonic() + 10
    while not (session in streams and streams[session].full) and time.monotonic() < deadline:
        time.sleep(0.01)
    mailbox = streams[session]
    assert mailbox.full
    time.sleep(0.2)  # the agent would write more if it could
    assert mailbox.size < capacity + 1000
    stream_headers = {**headers, "acp-session-id": session, "accept": "text/event-stream"}
    texts = []
    with http.stream("GET", base + "/acp", headers=stream_headers) as s:
        for message in events(s):
            if message.get("id") == 2:
                assert message["result"]["stopReason"] == "end_turn"
                break
            texts.append(message["params"]["update"]["content"]["text"])
    assert texts == [f"{n} " for n in range(count)]  # paced, nothing lost


@pytest.mark.anyio
async def test_websocket_defences(serve_app: Any) -> None:
    base = serve_app(token="s3cret")
    url = base.replace("http://", "ws://") + "/acp"
    auth = {"Authorization": "Bearer s3cret"}
    with anyio.fail_after(10):
        for headers, status in [
            ({}, 401),
            ({**auth, "Origin": "http://evil.example"}, 403),
            ({**auth, "Host": "evil.example"}, 421),
        ]:
            transport = acp.WebSocketTransport(url, headers=headers)
            with pytest.raises(acp.WebSocketError) as caught:
                async with acp.connect_to_agent(RecordingClient(), transport):
                    pass
            assert caught.value.status == status
        transport = acp.WebSocketTransport(url, headers=auth)
        async with acp.connect_to_agent(RecordingClient(), transport) as agent:
            await agent.initialize()
            assert transport.connection_id is not None and len(transport.connection_id) >= 22


def test_session_streams_are_bounded(serve_app: Any, http: httpx.Client) -> None:
    base = serve_app(max_session_streams=2)
    cid = initialize(http, base)
    headers = {"acp-connection-id": cid, "accept": "text/event-stream"}

    def open_stream(session: str) -> Any:
        return http.stream("GET", base + "/acp", headers={**headers, "acp-session-id": session})

    with open_stream("a") as a, open_stream("b") as b:
        assert (a.status_code, b.status_code) == (200, 200)
        with open_stream("c") as c:
            assert c.status_code == 429
    # Streams closed with nothing in them are forgotten: room again.
    with open_stream("e") as e:
        assert e.status_code == 200


@pytest.mark.anyio
async def test_an_oversized_websocket_message_closes_the_socket(serve_app: Any) -> None:
    base = serve_app(max_message_bytes=1000)
    url = base.replace("http://", "ws://") + "/acp"
    errors: list[acp.Error] = []
    with anyio.fail_after(10):
        try:
            async with acp.connect_to_agent(
                RecordingClient(), acp.WebSocketTransport(url)
            ) as agent:
                await agent.initialize()
                try:
                    await agent.send_request(acp.UntypedMessage("_t/echo", {"x": "y" * 2000}))
                except acp.Error as err:
                    errors.append(err)
        except acp.Error as err:
            errors.append(err)
    assert errors and all(err.code == acp.ErrorCode.INTERNAL_ERROR for err in errors)


@pytest.mark.anyio
async def test_many_websocket_messages_in_flight_are_each_answered(serve_app: Any) -> None:
    # Requests arrive many per read; the agent takes in every one the server
    # holds per receive() (and keeps the next wait for later), in order.
    base = serve_app()
    url = base.replace("http://", "ws://") + "/acp"
    answers: dict[int, Any] = {}
    with anyio.fail_after(20):
        async with acp.connect_to_agent(RecordingClient(), acp.WebSocketTransport(url)) as agent:
            await agent.initialize()

            async def ask(i: int) -> None:
                for round_ in range(5):
                    params = {"i": i, "round": round_, "pad": "x" * (i % 7) * 1000}
                    message = acp.UntypedMessage("_t/echo", params)
                    answers[i * 10 + round_] = await agent.send_request(message)

            async with anyio.create_task_group() as group:
                for i in range(100):
                    group.start_soon(ask, i)
    assert answers == {
        i * 10 + r: {"i": i, "round": r, "pad": "x" * (i % 7) * 1000}
        for i in range(100)
        for r in range(5)
    }


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"path": "acp"}, "ServerOptions.path must start with '/', not 'acp'"),
        ({"health_path": "health"}, "ServerOptions.health_path must start with '/'"),
        ({"health_path": ""}, "not '' (None turns it off)"),
        ({"idle_timeout": -5}, "ServerOptions.idle_timeout must be a positive number of seconds"),
        ({"idle_timeout": float("nan")}, "ServerOptions.idle_timeout must be a positive number"),
        ({"keepalive_interval": 0}, "ServerOptions.keepalive_interval must be a positive number"),
        ({"close_grace": -1.0}, "ServerOptions.close_grace must be a positive number"),
        ({"max_message_bytes": 0}, "ServerOptions.max_message_bytes must be an int >= 1"),
        ({"max_message_bytes": True}, "ServerOptions.max_message_bytes must be an int >= 1"),
        ({"max_buffered_bytes": 1.5}, "ServerOptions.max_buffered_bytes must be an int >= 0"),
        ({"max_buffered_bytes": -1}, "ServerOptions.max_buffered_bytes must be an int >= 0"),
        ({"max_session_streams": -1}, "ServerOptions.max_session_streams must be an int >= 1"),
    ],
)
def test_options_that_could_never_work_are_refused_at_once(
    setting: dict[str, Any], message: str
) -> None:
    """A path that no request can match, or a limit or a time that is not
    positive, is a ValueError when the app is made, not a 404 or an
    expired connection later."""
    with pytest.raises(ValueError, match=re.escape(message)):
        AcpApp(RemoteTestAgent, **setting)


def test_options_at_their_edges_are_accepted() -> None:
    app = AcpApp(
        RemoteTestAgent,
        path="/",
        health_path=None,
        idle_timeout=float("inf"),
        keepalive_interval=None,
        close_grace=0,
        max_buffered_bytes=0,
        max_session_streams=1,
        max_message_bytes=fractions.Fraction(10).numerator,
    )
    assert app.options.path == "/" and app.options.close_grace == 0
    assert AcpApp(RemoteTestAgent, idle_timeout=fractions.Fraction(1, 2)).options.idle_timeout
