"""Recording wire traces (docs/tracing.md): ``builder.trace``, ``acp-fast
trace -- AGENT`` between a client and a real agent process, and
``acp-fast conductor --trace`` through a chain of real processes."""

from __future__ import annotations

import collections
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

import acp_fast as acp
from acp_fast._async import trace as trace_module
from acp_fast.schema import v1

from .helpers import (
    AGENT_SCRIPT,
    PROCESS_TIMEOUT,
    PROXY_SCRIPT,
    Recording,
    agent_command,
    canonical,
    command,
    read_trace,
)

pytestmark = pytest.mark.anyio


def prompt(text: str) -> v1.PromptRequest:
    return v1.PromptRequest(session_id="chain-session", prompt=[v1.ContentBlockText(text=text)])


async def conversation(cx: acp.ConnectionTo[Any]) -> dict[str, Any]:
    """A normal turn, a cancelled one, and the agent's report."""
    await cx.send_request(v1.InitializeRequest(protocol_version=1))
    session = await cx.send_request(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
    assert session.session_id == "chain-session"
    done = await cx.send_request(prompt("hello"))
    assert done.stop_reason == "end_turn"
    parked = cx.send_request(prompt("park"))
    parked.cancel()
    with pytest.raises(acp.Error) as caught:
        await parked
    assert caught.value.code == acp.ErrorCode.REQUEST_CANCELLED
    report: dict[str, Any] = await cx.send_request(acp.UntypedMessage("test/report", {}))
    return report


def check_event_shapes(events: list[dict[str, Any]]) -> None:
    for event in events:
        assert event["dir"] in ("in", "out")
        assert isinstance(event["wall"], float) and isinstance(event["ts"], float)
        if event["type"] in ("request", "notification"):
            assert event["protocol"] == "acp" and isinstance(event["method"], str)
            assert "params" in event
        if event["type"] == "response":
            assert isinstance(event["is_error"], bool) and "payload" in event
        assert "raw" in event
    stamps = [event["ts"] for event in events]
    assert stamps == sorted(stamps), "monotonic timestamps, in recording order"


async def test_builder_trace_records_every_message_of_the_connection(
    anyio_backend: str, tmp_path: Path
):
    path = tmp_path / "client.jsons"
    seen = Recording()
    agent = acp.Subprocess(agent_command(anyio_backend))
    builder = acp.Client.builder().name("editor").observe(seen).trace(path)
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with builder.connect(agent) as cx:
            await conversation(cx)
    events, summary = read_trace(path)
    assert summary["recorded"] == len(events) == len(seen.messages)
    assert summary["dropped"] == 0
    check_event_shapes(events)
    # The raw JSON of each event is the message as it crossed, in order.
    assert [(e["dir"], canonical(e["raw"])) for e in events] == [
        (d, canonical(json.loads(data))) for d, data in seen.messages
    ]
    assert {e["hop"] for e in events} == {"editor"}
    outgoing = [e for e in events if e["dir"] == "out"]
    assert {(e["from"], e["to"]) for e in outgoing} == {("Client", "Agent")}
    prompts = [e for e in outgoing if e.get("method") == "session/prompt"]
    assert [e["session"] for e in prompts] == ["chain-session", "chain-session"]
    cancel = next(e for e in outgoing if e.get("method") == "$/cancel_request")
    assert cancel["params"] == {"requestId": prompts[1]["id"]}
    answer = next(e for e in events if e["type"] == "response" and e["id"] == prompts[1]["id"])
    assert answer["is_error"] and answer["payload"]["code"] == -32800


async def test_builder_trace_to_a_callback_gets_each_event_as_a_dict(anyio_backend: str):
    events: list[dict[str, Any]] = []
    agent = acp.Subprocess(agent_command(anyio_backend))
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().trace(events.append).connect(agent) as cx:
            await cx.send_request(v1.InitializeRequest(protocol_version=1))
    assert [e["type"] for e in events] == ["request", "response", "summary"]
    assert events[0]["method"] == "initialize"
    assert events[1]["payload"]["protocolVersion"] == 1
    assert events[2]["recorded"] == 2


def test_a_full_queue_drops_and_counts_and_never_blocks(tmp_path: Path):
    path = tmp_path / "dropping.jsons"
    writer = acp.TraceWriter(path, max_events=1)
    line = b'{"jsonrpc":"2.0","method":"n","params":{}}'
    for _ in range(2000):
        writer.record("out", "hop", "Client", "Agent", line)
    writer.close()
    events, summary = read_trace(path)
    assert summary["recorded"] + summary["dropped"] == 2000
    assert summary["dropped"] > 0
    assert len(events) == summary["recorded"]
    writer.record("out", "hop", "Client", "Agent", line)  # after close: ignored
    assert read_trace(path)[1] == summary


def _notification(index: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % index


def test_what_the_loop_encodes_and_what_the_writer_encodes_keep_their_order(tmp_path: Path):
    # Past _INLINE_ENTRIES pending entries the recording side encodes them
    # itself; a quiet writer's last entries are encoded by the writer thread
    # (docs/tracing.md). Both must land, once each, in recording order.
    path = tmp_path / "order.jsons"
    writer = acp.TraceWriter(path)
    burst = trace_module._INLINE_ENTRIES * 3 + 5
    for index in range(burst):  # three batches from here, five left over
        writer.record("out", "hop", "Client", "Agent", _notification(index))
    # The leftovers reach the file while the recorder is quiet; waiting for
    # them is the barrier before the next burst.
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while path.read_bytes().count(b"\n") < burst:
        assert time.monotonic() < deadline, "the writer left a quiet recorder's entries"
        time.sleep(0.01)
    for index in range(burst, 2 * burst):
        writer.record("out", "hop", "Client", "Agent", _notification(index))
    writer.close()
    events, summary = read_trace(path)
    assert [event["params"]["i"] for event in events] == list(range(2 * burst))
    assert summary["recorded"] == 2 * burst and summary["dropped"] == 0


def test_the_loop_emptying_the_list_while_the_writer_looks_at_it_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The writer thread looks at the oldest pending entry's age; the loop
    # may encode (and so empty) the list at that very moment. The writer is
    # held inside that look while the loop does so.
    path = tmp_path / "race.jsons"
    real_clock = trace_module._clock
    looking, encoded = threading.Event(), threading.Event()

    def clock() -> float:
        if threading.current_thread().name == "acp_fast trace writer" and not looking.is_set():
            looking.set()
            encoded.wait(PROCESS_TIMEOUT)
        return real_clock()

    monkeypatch.setattr(trace_module, "_clock", clock)
    writer = acp.TraceWriter(path)
    writer.record("out", "hop", "Client", "Agent", _notification(0))
    assert looking.wait(PROCESS_TIMEOUT)
    for index in range(1, trace_module._INLINE_ENTRIES):  # the loop encodes them all
        writer.record("out", "hop", "Client", "Agent", _notification(index))
    assert writer._pending == []
    encoded.set()
    # The writer finishes its look and writes the loop's batch.
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while writer._queue.written_entries < trace_module._INLINE_ENTRIES:
        assert writer._thread is not None and writer._thread.is_alive(), "the writer died"
        assert time.monotonic() < deadline, "the loop's batch was not written"
        time.sleep(0.01)
    total = trace_module._INLINE_ENTRIES + 10
    for index in range(trace_module._INLINE_ENTRIES, total):
        writer.record("out", "hop", "Client", "Agent", _notification(index))
    writer.close()
    events, summary = read_trace(path)
    assert [event["params"]["i"] for event in events] == list(range(total))
    assert summary["recorded"] == total


def test_lines_that_are_not_messages_are_recorded_as_they_are(tmp_path: Path):
    path = tmp_path / "odd.jsons"
    writer = acp.TraceWriter(path)
    writer.record("in", "h", "Agent", "Client", b"not json")
    writer.record("in", "h", "Agent", "Client", b'[{"jsonrpc":"2.0","method":"a"}]')
    writer.record("in", "h", "Agent", "Client", b'{"jsonrpc":"2.0","id":1,"result":null}')
    writer.record(
        "in",
        "h",
        "Agent",
        "Client",
        b'{"jsonrpc":"2.0","method":"_proxy/successor","params":'
        b'{"method":"session/update","params":{"sessionId":"s"}}}',
    )
    writer.close()
    events, _ = read_trace(path)
    assert [e["type"] for e in events] == ["invalid", "batch", "response", "notification"]
    assert events[0]["text"] == "not json"
    assert events[2]["payload"] is None and events[2]["is_error"] is False
    assert events[3]["method"] == "session/update" and events[3]["successor"] is True
    assert events[3]["session"] == "s"
    assert events[3]["raw"]["method"] == "_proxy/successor"


class _Line(bytes):
    """A caller's own bytes type."""


def test_messages_of_any_bytes_like_type_are_recorded(tmp_path: Path):
    path = tmp_path / "types.jsons"
    writer = acp.TraceWriter(path)
    update = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d}}'
    writer.record("out", "h", "Agent", "Client", b'{"jsonrpc":"2.0","id":1,"result":{}}')
    writer.record("out", "h", "Agent", "Client", bytearray(update % 1))
    writer.record("out", "h", "Agent", "Client", _Line(update % 2))
    writer.record("out", "h", "Agent", "Client", memoryview(update % 3))
    writer.close()
    events, summary = read_trace(path)
    assert [e["type"] for e in events] == ["response"] + ["notification"] * 3
    assert [e["raw"]["params"]["n"] for e in events[1:]] == [1, 2, 3]
    assert all(e["session"] == "s" for e in events[1:])
    assert summary["recorded"] == 4 and summary["dropped"] == 0


async def test_acp_fast_trace_sits_between_editor_and_agent(anyio_backend: str, tmp_path: Path):
    path = tmp_path / "tap.jsons"
    seen = Recording()
    tap = acp.Subprocess(
        [
            sys.executable,
            "-m",
            "acp_fast",
            "trace",
            "--out",
            str(path),
            "--",
            sys.executable,
            str(AGENT_SCRIPT),
            anyio_backend,
        ]  # fmt: skip
    )
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().observe(seen).connect(tap) as cx:
            report = await conversation(cx)
    assert tap.returncode == 0
    assert report["cancels"] == report["parked"]
    events, summary = read_trace(path)
    assert summary["dropped"] == 0
    check_event_shapes(events)
    # Every line both ways, exactly once, as the editor sent and received it.
    recorded = collections.Counter((e["dir"], canonical(e["raw"])) for e in events)
    expected = collections.Counter((d, canonical(json.loads(data))) for d, data in seen.messages)
    assert recorded == expected
    assert {(e["dir"], e["from"], e["to"]) for e in events} == {
        ("out", "Client", "Agent"),
        ("in", "Agent", "Client"),
    }


def conductor_process(backend: str, trace: Path) -> acp.Subprocess:
    python = sys.executable
    return acp.Subprocess(
        [
            python,
            "-m",
            "acp_fast",
            "conductor",
            "--backend",
            backend,
            "--trace",
            str(trace),
            "--proxy",
            command(python, "-m", "acp_fast", "example-proxy", "--backend", backend),
            "--proxy",
            command(python, PROXY_SCRIPT, backend),
            "--agent",
            command(python, AGENT_SCRIPT, backend),
        ]  # fmt: skip
    )


async def test_conductor_trace_records_every_hop_once(anyio_backend: str, tmp_path: Path):
    path = tmp_path / "chain.jsons"
    seen = Recording()
    conductor = conductor_process(anyio_backend, path)
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with acp.Client.builder().observe(seen).connect(conductor) as cx:
            report = await conversation(cx)
    assert conductor.returncode == 0
    events, summary = read_trace(path)
    assert summary["dropped"] == 0 and summary["recorded"] == len(events)
    check_event_shapes(events)
    assert {e["hop"] for e in events} == {"client", "proxy:0", "proxy:1", "agent"}

    # No message is recorded twice on a hop.
    crossings = collections.Counter((e["hop"], e["dir"], canonical(e["raw"])) for e in events)
    assert max(crossings.values()) == 1
    # The client's hop holds exactly what the client sent and received.
    client_hop = collections.Counter(
        ("in" if e["dir"] == "out" else "out", canonical(e["raw"]))
        for e in events
        if e["hop"] == "client"
    )
    assert client_hop == collections.Counter(
        (d, canonical(json.loads(data))) for d, data in seen.messages
    )
    # Each prompt enters and leaves each proxy once, and reaches the agent once.
    prompts = collections.Counter(
        (e["hop"], e["from"], e["to"]) for e in events if e.get("method") == "session/prompt"
    )
    assert prompts == {
        ("client", "Client", "Conductor"): 2,
        ("proxy:0", "Conductor", "Proxy(0)"): 2,
        ("proxy:0", "Proxy(0)", "Conductor"): 2,
        ("proxy:1", "Conductor", "Proxy(1)"): 2,
        ("proxy:1", "Proxy(1)", "Conductor"): 2,
        ("agent", "Conductor", "Agent"): 2,
    }
    # One $/cancel_request per hop, each with that hop's own id of the prompt.
    cancels = [e for e in events if e.get("method") == "$/cancel_request"]
    assert collections.Counter((e["hop"], e["from"]) for e in cancels) == {
        ("client", "Client"): 1,
        ("proxy:0", "Conductor"): 1,
        ("proxy:0", "Proxy(0)"): 1,
        ("proxy:1", "Conductor"): 1,
        ("proxy:1", "Proxy(1)"): 1,
        ("agent", "Conductor"): 1,
    }
    agent_cancel = next(e for e in cancels if e["hop"] == "agent")
    assert [agent_cancel["params"]["requestId"]] == report["cancels"] == report["parked"]
    # What a proxy sends on towards the agent is shown unwrapped, the
    # envelope kept in "raw".
    onwards = [
        e
        for e in events
        if e["hop"] == "proxy:0" and e["from"] == "Proxy(0)" and e.get("method") == "session/prompt"
    ]
    assert len(onwards) == 2
    assert all(e["successor"] and e["raw"]["method"] == "_proxy/successor" for e in onwards)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}\n',
        b'{"jsonrpc":"2.0","id":"a","method":"m"}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}',
        b'{"jsonrpc":"2.0","method":"n","params":{"inner":{"sessionId":3}}}',
        b'{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}',
        b'{"jsonrpc":"2.0","id":7,"result":null}',
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}',
        b'{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"a","params":{"sessionId":"q"}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"mcp/message","params":{"method":"tools/call","params":{}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}',
        b'{"id":1}',
        b"[1, 2]",
        b"not json",
    ],
)
def test_the_fast_event_encoding_says_what_the_general_one_says(line: bytes):
    from acp_fast._async.trace import build_event, encode_event

    arguments = (0.25, 1796160271.5, "in", "hop", "Agent", "Client", line)
    fast = json.loads(encode_event(*arguments))
    general = json.loads(msgspec.json.encode(build_event(*arguments)))
    assert fast == general


@pytest.mark.parametrize("mixed", [False, True])
@pytest.mark.parametrize("grouped", [False, True])
def test_a_batch_of_events_is_written_as_each_event_alone_would_be(mixed: bool, grouped: bool):
    # An entry is one read (a list of lines) or one write (whole messages,
    # each with its newline); every message of an entry has its time.
    from acp_fast._async.trace import (
        LINES,
        WRITTEN,
        _encode_batch,
        _entry_ends,
        encode_batch,
        encode_event,
    )

    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s"}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}',
        b'{"jsonrpc":"2.0","id":"x","result":{"stopReason":"end_turn"}}',
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}',
        b'{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"a","params":{}}}',
        b'{"id":1}',
        # Lines that start alike: the session is told from the start only
        # where the start decides it.
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":2}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"st","n":3}}',
        b'{"jsonrpc":"2.0","method":"n","params":{"a":{"params":{"sessionId":"s"}}}}',
        b'{"jsonrpc":"2.0","method":"n","params":{"a":{"params":{"sessionId":"s"}},"sessionId":"u"}}',
        b'{"jsonrpc":"2.0","method":"n","params":{"sessionId":"s\\u0041"}}',
        b'{"jsonrpc":"2.0","method":"n","params":{"sessionId":"sA"}}',
    ]
    if mixed:
        lines[2:2] = [b"[1, 2]", b"not json", b'{"a":1},{"b":2}']
    groups = (
        [lines[i : i + 3] for i in range(0, len(lines), 3)] if grouped else [[x] for x in lines]
    )
    items = []
    expected = []
    for i, group in enumerate(groups):
        clock = 0.5 + i / 7
        direction = "in" if i % 2 else "out"
        ends = _entry_ends(direction, "hop", "Agent", "Client")
        if direction == "in":
            items.append((clock, ends, b"\n".join(group), LINES, 0, 0))
        else:
            items.append((clock, ends, b"".join(x + b"\n" for x in group), WRITTEN, 0, 0))
        expected += [
            encode_event(
                clock - 0.5, 1796160271.5 + (clock - 0.5), direction, "hop", "Agent", "Client", x
            )
            + b"\n"
            for x in group
        ]
    assert encode_batch(items, 0.5, 1796160271.5) == b"".join(expected)
    # The writer counts the events it wrote from what the encoding says.
    assert _encode_batch(items, 0.5, 1796160271.5) == (b"".join(expected), len(expected))


async def test_a_read_of_several_lines_is_recorded_message_by_message(
    anyio_backend: str, tmp_path: Path
):
    # Lines that came in one read are one entry of the queue, written as one
    # event each with the read's time; an oversized line among them is
    # recorded as its head and size; the answers are "out" events.
    from tests.support import echo_server, serving

    path = tmp_path / "agent.jsons"
    builder = echo_server().name("served").max_message_size(200).trace(path)
    async with serving(builder) as peer:
        peer.send(
            b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"sessionId":"s","n":1}}\n'
            b'{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"' + b"x" * 300 + b'"}}\n'
            b'{"jsonrpc":"2.0","method":"note","params":{"sessionId":"s"}}\n'
            b"not json\n"
        )
        answers = [await peer.receive() for _ in range(3)]
    assert sorted(str(a.get("id")) for a in answers) == ["1", "2", "None"]
    events, summary = read_trace(path)
    incoming = [e for e in events if e["dir"] == "in"]
    assert [e["type"] for e in incoming] == ["request", "invalid", "notification", "invalid"]
    assert len({e["ts"] for e in incoming}) == 1, "one read: one time"
    assert incoming[0]["session"] == incoming[2]["session"] == "s"
    assert incoming[1]["oversized"] > 300 and incoming[1]["text"].startswith('{"jsonrpc"')
    assert incoming[3]["text"] == "not json"
    outgoing = [e for e in events if e["dir"] == "out"]
    assert len(outgoing) == 3 and {e["hop"] for e in events} == {"served"}
    assert all(e["ts"] >= incoming[0]["ts"] for e in outgoing)
    assert summary["recorded"] == len(events) == 7 and summary["dropped"] == 0
