"""OpenTelemetry spans for ACP requests (``pip install 'acp-fast[otel]'``).

``instrument(builder)`` makes each connection of ``builder`` create one span
per request (docs/tracing.md):

* a CLIENT span for each request it sends, from send to answer, whose trace
  context travels in the request's ``params._meta.traceparent`` (W3C Trace
  Context; ``tracestate`` too when there is one);
* a SERVER span for each request it receives, from arrival to answer, the
  child of the span named by that ``traceparent``, so a client's and an
  agent's spans join up across the hop.

Attributes: ``rpc.system`` ("acp"), ``rpc.method``,
``rpc.jsonrpc.request_id``, ``acp.session_id`` (when the params name one),
``acp.outcome`` ("ok", "error", "cancelled"), and
``rpc.jsonrpc.error_code`` for error answers. A ``$/cancel_request`` (sent,
or received for a request being served) and a ``session/cancel`` (received
for a prompt being served) are span events. A span still open when the
connection ends is ended with an error status.

A client span's parent is the span current where the request is sent.
"""

from __future__ import annotations

from typing import Any

import msgspec
from opentelemetry import context, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ._async.builder import Builder
from ._async.observe import Observer, OutgoingRewriter
from ._errors import Error

__all__ = ("instrument",)

_SUCCESSOR = "_proxy/successor"
_CANCEL_REQUEST = "$/cancel_request"
_SESSION_CANCEL = "session/cancel"
_CANCELLED = -32800
_propagator = TraceContextTextMapPropagator()
_decode = msgspec.json.decode
_encode = msgspec.json.encode


def instrument(
    builder: Builder[Any], *, tracer_provider: TracerProvider | None = None
) -> Builder[Any]:
    """Give each connection of ``builder`` request spans; returns ``builder``."""
    tracer = trace.get_tracer("acp_fast", tracer_provider=tracer_provider)
    return builder.observe(lambda: _Spans(tracer))


def _id_key(request_id: Any) -> str:
    return f"s{request_id}" if type(request_id) is str else repr(request_id)


def _inner(message: dict[str, Any]) -> tuple[str | None, Any]:
    """The method and params, looking inside a ``_proxy/successor`` envelope."""
    method = message.get("method")
    params = message.get("params")
    if method == _SUCCESSOR and type(params) is dict:
        return params.get("method"), params.get("params")
    return method, params


def _session_of(params: Any) -> str | None:
    if type(params) is dict:
        session = params.get("sessionId")
        if type(session) is str:
            return session
    return None


class _Spans(Observer, OutgoingRewriter):
    """The spans of one connection."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        self._client: dict[int, Span] = {}
        self._server: dict[str, tuple[Span, str | None, str | None]] = {}

    # -- requests we send -------------------------------------------------------

    def on_request_sent(self, request_id: int, method: str) -> None:
        span = self._tracer.start_span(
            method,
            context=context.get_current(),
            kind=SpanKind.CLIENT,
            attributes={
                "rpc.system": "acp",
                "rpc.method": method,
                "rpc.jsonrpc.request_id": request_id,
            },
        )
        self._client[request_id] = span

    def rewrite_outgoing(self, data: bytes) -> bytes:
        # Only requests of ours and answers of requests being served matter;
        # a cheap look at the bytes skips the rest undecoded.
        if not self._client and not self._server:
            return data
        try:
            message = _decode(data)
        except (msgspec.DecodeError, RecursionError):
            return data
        if type(message) is not dict:
            return data
        request_id = message.get("id")
        if "method" in message:
            span = self._client.get(request_id) if type(request_id) is int else None
            if span is None:
                return data
            return self._inject(span, message, data)
        if request_id is not None and ("result" in message or "error" in message):
            self._answered(request_id, message)
        return data

    def _inject(self, span: Span, message: dict[str, Any], data: bytes) -> bytes:
        method, params = _inner(message)
        session = _session_of(params)
        if session is not None:
            span.set_attribute("acp.session_id", session)
        if params is None:
            params = {}
        if type(params) is not dict:
            return data  # positional params have no _meta
        carrier: dict[str, str] = {}
        _propagator.inject(carrier, context=trace.set_span_in_context(span))
        meta = params.get("_meta")
        params["_meta"] = {**meta, **carrier} if type(meta) is dict else carrier
        if message.get("method") == _SUCCESSOR:
            message["params"]["params"] = params
        else:
            message["params"] = params
        return _encode(message) + b"\n"

    def on_request_cancelled(self, request_id: int, method: str) -> None:
        span = self._client.get(request_id)
        if span is not None:
            span.add_event("acp.cancel_request.sent")

    def on_request_answered(self, request_id: int, method: str) -> None:
        span = self._client.pop(request_id, None)
        if span is not None:
            span.set_attribute("acp.outcome", "ok")
            span.end()

    def on_request_failed(self, request_id: int, method: str, error: Error) -> None:
        span = self._client.pop(request_id, None)
        if span is not None:
            _end_failed(span, error.code, error.message)

    # -- requests we serve ----------------------------------------------------

    def on_message(self, direction: str, data: bytes, oversized: int | None = None) -> None:
        if direction != "in" or oversized is not None:
            return
        try:
            message = _decode(data)
        except (msgspec.DecodeError, RecursionError):
            return
        if type(message) is not dict or "method" not in message:
            return
        method, params = _inner(message)
        if type(method) is not str:
            return
        request_id = message.get("id")
        if request_id is None:
            self._notified(method, params)
            return
        parent = context.get_current()
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is dict and "traceparent" in meta:
            parent = _propagator.extract(meta)
        session = _session_of(params)
        attributes: dict[str, Any] = {
            "rpc.system": "acp",
            "rpc.method": method,
            "rpc.jsonrpc.request_id": str(request_id),
        }
        if session is not None:
            attributes["acp.session_id"] = session
        span = self._tracer.start_span(
            method, context=parent, kind=SpanKind.SERVER, attributes=attributes
        )
        self._server[_id_key(request_id)] = (span, method, session)

    def _notified(self, method: str, params: Any) -> None:
        if method == _CANCEL_REQUEST and type(params) is dict:
            served = self._server.get(_id_key(params.get("requestId")))
            if served is not None:
                served[0].add_event("acp.cancel_request.received")
        elif method == _SESSION_CANCEL:
            session = _session_of(params)
            for span, served_method, served_session in self._server.values():
                if served_method == "session/prompt" and served_session == session:
                    span.add_event("acp.session_cancel.received")

    def _answered(self, request_id: Any, message: dict[str, Any]) -> None:
        served = self._server.pop(_id_key(request_id), None)
        if served is None:
            return
        span = served[0]
        error = message.get("error")
        if type(error) is dict:
            code = error.get("code")
            _end_failed(span, code if type(code) is int else None, str(error.get("message")))
            return
        result = message.get("result")
        cancelled = type(result) is dict and result.get("stopReason") == "cancelled"
        span.set_attribute("acp.outcome", "cancelled" if cancelled else "ok")
        span.end()

    def on_close(self) -> None:
        for span in self._client.values():
            _end_failed(span, None, "connection closed")
        for span, _, _ in self._server.values():
            _end_failed(span, None, "connection closed before the answer")
        self._client.clear()
        self._server.clear()


def _end_failed(span: Span, code: int | None, message: str) -> None:
    if code is not None:
        span.set_attribute("rpc.jsonrpc.error_code", code)
    if code == _CANCELLED:
        # Asked for: not a failure of the request.
        span.set_attribute("acp.outcome", "cancelled")
    else:
        span.set_attribute("acp.outcome", "error")
        span.set_status(Status(StatusCode.ERROR, message))
    span.end()
