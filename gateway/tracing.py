"""Traces of the gateway's traffic by the OpenTelemetry semantic conventions for MCP and A2A
(open-telemetry/semantic-conventions-genai v0.1.0, `docs/gen-ai/mcp.md`, status Development), made with the
maintained SDK and exported by its OTLP/HTTP exporter. Off unless an endpoint is set
(`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): then `ENABLED` is False and no
span, context or attribute is ever built, so tracing off costs one attribute read a request.

For each MCP request the gateway receives and forwards:

- a SERVER span `{mcp.method.name} {target}` (target: the tool or prompt name), its parent the trace context
  in the request's `params._meta` (SEP-414) or else the HTTP `traceparent`, the HTTP context linked when
  both are there; `mcp.method.name`, `mcp.protocol.version`, `mcp.session.id`, `jsonrpc.request.id`,
  `gen_ai.operation.name` `execute_tool` and `gen_ai.tool.name` for `tools/call`, `gen_ai.prompt.name`,
  `mcp.resource.uri`;
- a CLIENT span, its child, for the exchange with the upstream (a virtual server's member: named by the
  member's own tool name), with `server.address` and `server.port`; its context is injected, unprefixed
  (`traceparent`, `tracestate`, `baggage`), into the forwarded message's `params._meta`;
- on both, `error.type` (the JSON-RPC error code as a string, or `tool_error` for a result with `isError`)
  and `rpc.response.status_code`, and status ERROR when `error.type` is set;
- refusals (the rule, quarantine, limits, pins, blocks, a missing credential) as a `gateway.refusal` event
  with the reason, never the caller's token or arguments; a request refused whole before its body is read
  (the token's audience, a quarantine, the Origin) as an HTTP SERVER span `{method}` with that event;
- a tool call's arguments and result (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) only when
  TRACE_CAPTURE_CONTENT is on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`), passed through the
  one redaction rule (core/redaction.py) and cut to CAPTURED_MAX characters."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.conf import settings
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from core.redaction import redacted
from gateway import headers, jsonrpc

ENABLED = False
_provider = None
SCOPE = "mcp-gateway-registry.gateway"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CONTEXT_KEYS = ("traceparent", "tracestate", "baggage")
TOOL_ERROR = "tool_error"
CAPTURED_MAX = 4096
_tracer = None


def configure() -> bool:
    """Trace when the SDK's standard variables name an OTLP endpoint (called once per web process).
    The sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`) and the service's name
    (`OTEL_SERVICE_NAME`, default `mcp-gateway-registry`) are the SDK's own variables."""
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or "mcp-gateway-registry"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    enable(provider)
    return True


def enable(provider) -> None:
    """Trace with `provider` (a configured SDK TracerProvider: `configure`, or an embedding's own)."""
    global ENABLED, _tracer, _provider
    _provider, _tracer = provider, provider.get_tracer(SCOPE)
    ENABLED = True


def flush() -> None:
    """Export the spans ended so far now (the batch exporter otherwise sends every few seconds)."""
    if _provider is not None:
        _provider.force_flush()


def disable() -> None:
    """Stop tracing: the spans ended so far are exported first."""
    global ENABLED, _tracer, _provider
    if _provider is not None:
        _provider.shutdown()
    ENABLED, _tracer, _provider = False, None, None


@dataclass
class Exchange:
    """The spans of one request through the gateway: its SERVER span and its upstream CLIENT span."""

    server: object
    client: object | None = None
    ended: bool = False


@dataclass
class Traced:
    """The exchanges of one HTTP request's forwarded MCP requests, by JSON-RPC id (`jsonrpc.id_key`)."""

    exchanges: dict = field(default_factory=dict)


def received(message: dict, *, session_id: str, protocol_version: str, http: dict) -> Exchange | None:
    """The SERVER span of a request the gateway received (None when tracing is off); `http`: the trace
    context of the HTTP request that carried it (`_http_context`)."""
    if not ENABLED or "method" not in message or "id" not in message:
        return None
    method = str(message["method"])[:100]
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    carried = {key: meta[key] for key in CONTEXT_KEYS if isinstance(meta.get(key), str)}
    parent = propagate.extract(carried or http)
    links = []
    if carried and http:
        linked = trace.get_current_span(propagate.extract(http)).get_span_context()
        if linked.is_valid:
            links.append(Link(linked))
    attributes = {
        "mcp.method.name": method,
        "jsonrpc.request.id": str(message["id"])[:100],
        "mcp.protocol.version": protocol_version,
    }
    if session_id:
        attributes["mcp.session.id"] = session_id
    target = _target(method, params, attributes)
    span = _tracer.start_span(
        f"{method} {target}" if target else method,
        context=parent,
        kind=SpanKind.SERVER,
        attributes=attributes,
        links=links,
    )
    return Exchange(server=span)


def received_all(scope, read, checked) -> Traced | None:
    """The SERVER spans of a POST body's requests (`read`: jsonrpc.read's messages, `checked`: what the
    one rule made of them); a request the rule refused has its span ended with the refusal."""
    if not ENABLED:
        return None
    http = _http_context(scope)
    session_id = headers.first(scope, b"mcp-session-id") or ""
    version = headers.first(scope, b"mcp-protocol-version") or ""
    denied = {jsonrpc.id_key(answer.get("id")): answer["error"] for answer in checked.denied}
    traced = Traced()
    for message in read:
        raw = message.raw if isinstance(message.raw, dict) else {}
        params = raw.get("params") if isinstance(raw.get("params"), dict) else {}
        exchange = received(
            raw,
            session_id=session_id,
            protocol_version=version or str(params.get("protocolVersion", ""))[:20],
            http=http,
        )
        if exchange is None:
            continue
        key = jsonrpc.id_key(raw["id"])
        if key in denied:
            refused(exchange, denied[key]["message"], str(denied[key]["code"]))
        else:
            traced.exchanges[key] = exchange
    return traced


def _http_context(scope) -> dict:
    """The trace context an HTTP request carries in its headers (`traceparent`, `tracestate`, `baggage`)."""
    return {key: value for key in CONTEXT_KEYS if (value := headers.first(scope, key.encode()))}


def _target(method: str, params: dict, attributes: dict) -> str:
    name = params.get("name") if isinstance(params.get("name"), str) else ""
    if method == "tools/call" and name:
        attributes |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name[:200]}
        if settings.TRACE_CAPTURE_CONTENT:
            attributes["gen_ai.tool.call.arguments"] = captured(params.get("arguments"))
        return name[:200]
    if method == "prompts/get" and name:
        attributes["gen_ai.prompt.name"] = name[:200]
        return name[:200]
    if isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = params["uri"][:500]
    return ""


def upstream(exchange: Exchange | None, message: dict, url: str, *, name: str | None = None) -> dict:
    """Start the CLIENT span of `exchange` toward `url` and return `message` with its trace context in
    `params._meta` (`name`: the tool's own name at the member, when the client knows it by another)."""
    if exchange is None:
        return message
    attributes = dict(getattr(exchange.server, "attributes", {}) or {})
    method = attributes.get("mcp.method.name", str(message.get("method", "")))
    if name is not None and method == "tools/call":
        attributes["gen_ai.tool.name"] = name
    target = name or attributes.get("gen_ai.tool.name") or attributes.get("gen_ai.prompt.name")
    parts = urlsplit(url)
    attributes["server.address"] = parts.hostname or ""
    attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
    context = trace.set_span_in_context(exchange.server)
    exchange.client = _tracer.start_span(
        f"{method} {target}" if target else method,
        context=context,
        kind=SpanKind.CLIENT,
        attributes=attributes,
    )
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(exchange.client))
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    traced = copy.copy(message)  # of its own kind (a resolved task request keeps what it was resolved to)
    traced["params"] = {**params, "_meta": {**meta, **carrier}}
    return traced


def refused(exchange: Exchange | None, reason: str, error_type: str) -> None:
    """A refusal of the gateway's own: an event with its reason, and the span ended in error."""
    if exchange is None:
        return
    exchange.server.add_event("gateway.refusal", {"reason": reason[:500]})
    ended(exchange, error_type)


def captured(value) -> str:
    """A captured argument or result: redacted, as JSON, cut to CAPTURED_MAX characters."""
    return json.dumps(redacted(value), ensure_ascii=False, separators=(",", ":"), default=str)[:CAPTURED_MAX]


def refused_request(scope, status: int, code: str, reason: str) -> None:
    """A request the gateway refused whole, before reading its body (the audience, a quarantine, the
    Origin): an HTTP SERVER span `{method}` with the refusal as an event, since no MCP message is known."""
    if not ENABLED:
        return
    http = _http_context(scope)
    method = str(scope.get("method", ""))
    attributes = {
        "http.request.method": method,
        "url.path": str(scope.get("path", ""))[:500],
        "http.response.status_code": status,
        "error.type": code,
    }
    span = _tracer.start_span(
        method, context=propagate.extract(http), kind=SpanKind.SERVER, attributes=attributes
    )
    span.add_event("gateway.refusal", {"reason": reason[:500]})
    span.set_status(Status(StatusCode.ERROR))
    span.end()


def ended(exchange: Exchange | None, error_type: str | None, result=None) -> None:
    """End both spans (once), with `error_type` when the answer was an error (`result`: the tool call's
    result, captured when TRACE_CAPTURE_CONTENT is on)."""
    if exchange is None or exchange.ended:
        return
    exchange.ended = True
    if result is not None and settings.TRACE_CAPTURE_CONTENT:
        exchange.server.set_attribute("gen_ai.tool.call.result", captured(result))
    for span in (exchange.client, exchange.server):
        if span is None:
            continue
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            if error_type != TOOL_ERROR:
                span.set_attribute("rpc.response.status_code", error_type)
            span.set_status(Status(StatusCode.ERROR))
        span.end()


def forwarded(traced: Traced | None, messages: list, url: str) -> list:
    """`messages` as they go upstream, each request with its CLIENT span's context in `params._meta`."""
    if traced is None:
        return messages
    return [
        upstream(traced.exchanges.get(jsonrpc.id_key(m.get("id"))), m, url)
        if "method" in m and "id" in m
        else m
        for m in messages
    ]


def ended_all(traced: Traced | None, outcomes: dict, failure: str | None = None) -> None:
    """End every exchange of a request: by its answer's outcome (`outcomes`: error.type by id key), or
    `failure` for all when the upstream's answer never came whole (an HTTP status, a refusal's code)."""
    if traced is None:
        return
    for key, exchange in traced.exchanges.items():
        error_type, result = outcomes.get(key, (None, None))
        ended(exchange, failure if failure is not None else error_type, result)


def refused_all(traced: Traced | None, reason: str, error_type: str) -> None:
    if traced is None:
        return
    for exchange in traced.exchanges.values():
        refused(exchange, reason, error_type)


def exchange_of(checked, message: dict) -> Exchange | None:
    """The exchange of one request of a checked body (None when tracing is off)."""
    if checked is None or checked.trace is None or "id" not in message:
        return None
    return checked.trace.exchanges.get(jsonrpc.id_key(message["id"]))


def alone(checked, message: dict) -> Traced | None:
    """The exchanges of a body holding one request only (a virtual server's routed request, streamed)."""
    exchange = exchange_of(checked, message)
    if exchange is None:
        return None
    return Traced({jsonrpc.id_key(message["id"]): exchange})


def name_of(message: dict) -> str | None:
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    return params["name"] if isinstance(params.get("name"), str) else None


def outcomes(answer) -> dict:
    """(`error.type`, its result) of each answer of a decoded answer (or batch), by id key (`error.type`
    None for a success)."""
    answers = answer if isinstance(answer, list) else [answer]
    return {
        jsonrpc.id_key(a.get("id")): (outcome(a), a.get("result"))
        for a in answers
        if isinstance(a, dict) and "id" in a
    }


def outcome(answer) -> str | None:
    """`error.type` of one JSON-RPC answer: its error code as a string, `tool_error` for a result with
    `isError`, None for a success."""
    if not isinstance(answer, dict):
        return None
    error = answer.get("error")
    if isinstance(error, dict):
        return str(error.get("code", "error"))[:40]
    result = answer.get("result")
    return TOOL_ERROR if isinstance(result, dict) and result.get("isError") is True else None


# -- A2A: a SERVER span `{a2a.method.name}` per call the gateway carries to an agent ----------------------


def a2a_received(scope, call, agent) -> Exchange | None:
    """The SERVER span of an A2A call (`call`: gateway/a2a/calls.Call), its parent the HTTP trace context."""
    if not ENABLED:
        return None
    message = call.params.get("message") if isinstance(call.params.get("message"), dict) else {}
    attributes = {
        "a2a.method.name": call.method[:100],
        "a2a.protocol.version": "0.3" if call.legacy else "1.0",
        "gen_ai.agent.name": getattr(agent, "name", "") or agent.path,
    }
    context_id = message.get("contextId") or message.get("context_id")
    task_id = call.params.get("id") or message.get("taskId") or call.path_task
    if isinstance(context_id, str):
        attributes["gen_ai.conversation.id"] = context_id[:200]
    if isinstance(task_id, str):
        attributes["a2a.task.id"] = task_id[:200]
    span = _tracer.start_span(
        call.method[:100],
        context=propagate.extract(_http_context(scope)),
        kind=SpanKind.SERVER,
        attributes=attributes,
    )
    return Exchange(server=span)


def a2a_answered(exchange: Exchange | None, answer, result) -> None:
    """End an A2A call's span with what the agent answered: the task's id and state, or the error."""
    if exchange is None:
        return
    task = result.get("task") if isinstance(result, dict) and isinstance(result.get("task"), dict) else result
    if isinstance(task, dict):
        status = task.get("status") if isinstance(task.get("status"), dict) else {}
        task_id = task.get("id") if task.get("kind", "task") == "task" else task.get("taskId")
        if isinstance(task_id, str):
            exchange.server.set_attribute("a2a.task.id", task_id[:200])
        if isinstance(status.get("state"), str):
            exchange.server.set_attribute("a2a.task.state", status["state"][:40])
        if isinstance(task.get("contextId"), str):
            exchange.server.set_attribute("gen_ai.conversation.id", task["contextId"][:200])
    ended(exchange, outcome(answer) if isinstance(answer, dict) and "error" in answer else None)
