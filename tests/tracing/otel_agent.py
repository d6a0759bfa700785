"""An agent with OpenTelemetry spans: ``python otel_agent.py [asyncio|trio]``.

``initialize`` and ``session/new`` answer; ``session/prompt`` "park" waits
until cancelled (-32800), any other prompt ends the turn; ``test/spans``
answers the spans this agent finished so far (the SDK's in-memory exporter).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import acp_fast as acp
from acp_fast.otel import instrument
from acp_fast.schema import v1

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))


def span_report() -> list[dict[str, Any]]:
    report = []
    for span in exporter.get_finished_spans():
        assert span.context is not None
        report.append(
            {
                "name": span.name,
                "kind": span.kind.name,
                "trace_id": format(span.context.trace_id, "032x"),
                "span_id": format(span.context.span_id, "016x"),
                "parent": format(span.parent.span_id, "016x") if span.parent else None,
                "attributes": dict(span.attributes or {}),
                "events": [event.name for event in span.events],
            }
        )
    return report


def build() -> acp.Builder[Any]:
    agent = acp.Agent.builder().name("otel-agent")

    @agent.on_receive_request(v1.InitializeRequest)
    async def initialize(request: v1.InitializeRequest, responder: Any, cx: Any) -> None:
        responder.respond(v1.InitializeResponse(protocol_version=request.protocol_version))

    @agent.on_receive_request(v1.PromptRequest)
    async def prompt(request: v1.PromptRequest, responder: acp.Responder[Any], cx: Any) -> None:
        text = "".join(b.text for b in request.prompt if isinstance(b, v1.ContentBlockText))
        if text == "park":

            async def wait_for_cancel() -> None:
                try:
                    await responder.cancellation().run_until_cancelled(anyio.sleep_forever)
                except acp.Error as error:
                    responder.respond_with_error(error)

            cx.spawn(wait_for_cancel)
            return
        responder.respond(v1.PromptResponse(stop_reason="end_turn"))

    @agent.on_receive_request("test/spans")
    async def spans(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond({"spans": span_report()})

    return instrument(agent, tracer_provider=provider)


if __name__ == "__main__":
    anyio.run(
        build().connect_to, acp.stdio(), backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio"
    )
