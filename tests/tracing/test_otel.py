"""OpenTelemetry spans (acp_fast.otel, docs/tracing.md): one span per request
on each side of a real stdio hop, joined by ``_meta.traceparent``; checked
with the SDK's in-memory exporter on both sides."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

import acp_fast as acp
from acp_fast.otel import instrument
from acp_fast.schema import v1

from .helpers import PROCESS_TIMEOUT, Recording

pytestmark = pytest.mark.anyio

AGENT = Path(__file__).parent / "otel_agent.py"


def prompt(text: str) -> v1.PromptRequest:
    return v1.PromptRequest(session_id="s-1", prompt=[v1.ContentBlockText(text=text)])


async def test_client_and_agent_spans_join_up_across_a_stdio_hop(anyio_backend: str):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    seen = Recording()
    builder = instrument(acp.Client.builder(), tracer_provider=provider).observe(seen)
    agent = acp.Subprocess([sys.executable, str(AGENT), anyio_backend])
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with builder.connect(agent) as cx:
            with tracer.start_as_current_span("editor action") as root:
                await cx.send_request(v1.InitializeRequest(protocol_version=1))
                await cx.send_request(prompt("hello"))
                parked = cx.send_request(prompt("park"))
                parked.cancel()
                with pytest.raises(acp.Error):
                    await parked
            report: dict[str, Any] = await cx.send_request(acp.UntypedMessage("test/spans", {}))

    client = {span.attributes["rpc.jsonrpc.request_id"]: span for span in exporter.get_finished_spans()
              if span.kind == SpanKind.CLIENT}  # fmt: skip
    served = {span["attributes"]["rpc.jsonrpc.request_id"]: span for span in report["spans"]}
    trace_id = format(root.get_span_context().trace_id, "032x")

    sent = [m for m in seen.decoded("out") if "method" in m and "id" in m]
    assert [m["method"] for m in sent] == [
        "initialize", "session/prompt", "session/prompt", "test/spans",
    ]  # fmt: skip
    for message in sent[:3]:
        request_id = message["id"]
        span = client[request_id]
        # The request carried the client span's context, and the agent's span is its child.
        traceparent = message["params"]["_meta"]["traceparent"]
        assert traceparent.split("-")[1:3] == [
            format(span.context.trace_id, "032x"),
            format(span.context.span_id, "016x"),
        ]
        assert span.parent is not None and span.parent.span_id == root.get_span_context().span_id
        server = served[str(request_id)]
        assert server["kind"] == "SERVER" and server["name"] == message["method"]
        assert server["trace_id"] == trace_id
        assert server["parent"] == format(span.context.span_id, "016x")
        assert span.attributes["rpc.method"] == message["method"]

    normal, cancelled = client[sent[1]["id"]], client[sent[2]["id"]]
    assert normal.attributes["acp.session_id"] == "s-1"
    assert normal.attributes["acp.outcome"] == "ok"
    assert normal.status.status_code == StatusCode.UNSET
    assert cancelled.attributes["acp.outcome"] == "cancelled"
    assert cancelled.attributes["rpc.jsonrpc.error_code"] == acp.ErrorCode.REQUEST_CANCELLED
    assert [event.name for event in cancelled.events] == ["acp.cancel_request.sent"]
    served_cancelled = served[str(sent[2]["id"])]
    assert served_cancelled["attributes"]["acp.outcome"] == "cancelled"
    assert served_cancelled["attributes"]["acp.session_id"] == "s-1"
    assert served_cancelled["events"] == ["acp.cancel_request.received"]
    assert served[str(sent[1]["id"])]["attributes"]["acp.outcome"] == "ok"


async def test_a_request_left_unanswered_at_close_ends_its_span_with_an_error(
    anyio_backend: str,
):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = acp.Subprocess([sys.executable, "-c", "import sys; sys.stdin.readline()"])
    builder = instrument(acp.Client.builder(), tracer_provider=provider)
    with anyio.fail_after(PROCESS_TIMEOUT):
        async with builder.connect(agent) as cx:
            with pytest.raises(acp.Error):
                await cx.send_request(prompt("hello"))
    (span,) = exporter.get_finished_spans()
    assert span.name == "session/prompt" and span.kind == SpanKind.CLIENT
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["acp.outcome"] == "error"
