"""Traces of the gateway's traffic by the OpenTelemetry semantic conventions for MCP and A2A, read from
the SDK's in-memory exporter, and received whole by a real OTLP/HTTP receiver (opentelemetry-proto): a
call through a virtual server gives a SERVER span under the alias and a CLIENT child under the member's
own tool name; a real MCP server (SDK) receives `params._meta.traceparent` of that trace; an `isError`
result is `error.type=tool_error`; a refusal is an event with its reason; an A2A SendMessage has its span
with the task's id and state."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from gateway import tracing
from tests.agents.test_a2a_gateway import agent  # noqa: F401
from tests.agents.test_a2a_gateway import run as a2a_run
from tests.agents.test_a2a_gateway import send as a2a_send
from tests.factories import ServerFactory, ToolFactory
from tests.gateway.gateway_calls import caller_fixture, gateway_fixture, run  # noqa: F401
from tests.mcp_servers import UvicornThread, loopback_socket
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"server": "*", "methods": ["*"], "tools": ["*"]}


def tools_app():
    server = MCPServer("Traced", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool()
    def meta_seen(ctx: Context) -> str:
        """The trace context this call arrived with."""
        meta = ctx.request_context.meta
        seen = meta if isinstance(meta, dict) else meta.model_dump() if meta is not None else {}
        return json.dumps({key: seen.get(key) for key in ("traceparent", "tracestate")})

    @server.tool()
    def login(user: str, password: str) -> str:
        """Sign in."""
        return f"welcome {user}"

    @server.tool()
    def broken() -> str:
        """Always fails."""
        raise ToolError("the tool failed")

    return server.streamable_http_app()


@pytest.fixture
def upstream():
    running = UvicornThread(tools_app(), loopback_socket()).start()
    server = ServerFactory(path="/tools", name="Tools", proxy_pass_url=running.url("/mcp"))
    for name in ("add", "meta_seen", "login", "broken"):
        ToolFactory(server=server, name=name)
    yield server
    running.stop()


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield exporter
    tracing.disable()


def by_name(exporter) -> dict:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_a_call_through_a_virtual_server_is_a_server_span_with_a_client_child_named_by_the_member(
    gateway, upstream, spans, caller
):
    virtual_server_create(
        actor=None,
        path="/team",
        definition={
            "name": "Team",
            "members": [{"server": "/tools", "tool_settings": {"add": {"alias": "plus"}}}],
        },
    )
    token = caller(EVERYTHING)

    async def work(client):
        return (await client.call_tool("plus", {"a": 2, "b": 3})).content[0].text

    assert run(gateway.url("/team/mcp"), token, work) == "5"
    found = by_name(spans)
    server, client = found["tools/call plus"], found["tools/call add"]

    assert (server.kind, client.kind) == (SpanKind.SERVER, SpanKind.CLIENT)
    assert client.parent.span_id == server.context.span_id
    assert client.context.trace_id == server.context.trace_id
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.operation.name"] == "execute_tool"
    assert (server.attributes["gen_ai.tool.name"], client.attributes["gen_ai.tool.name"]) == ("plus", "add")
    assert client.attributes["server.address"] == "127.0.0.1"
    assert server.attributes["mcp.session.id"]
    assert "error.type" not in server.attributes
    assert server.status.status_code == StatusCode.UNSET
    assert "gen_ai.tool.call.arguments" not in server.attributes  # captured only when asked for


def test_arguments_and_results_are_captured_redacted_when_asked_for(
    gateway, upstream, spans, caller, settings
):
    settings.TRACE_CAPTURE_CONTENT = True
    token = caller(EVERYTHING)

    async def work(client):
        return (await client.call_tool("login", {"user": "ada", "password": "hunter2"})).content[0].text

    assert run(gateway.url("/tools/mcp"), token, work) == "welcome ada"
    server = next(
        s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER and s.name == "tools/call login"
    )

    assert json.loads(server.attributes["gen_ai.tool.call.arguments"]) == {
        "user": "ada",
        "password": "[redacted]",
    }
    assert json.loads(server.attributes["gen_ai.tool.call.result"])["content"][0]["text"] == "welcome ada"
    assert "hunter2" not in json.dumps(dict(server.attributes))


def test_the_upstream_receives_the_trace_context_in_params_meta(gateway, upstream, spans, caller):
    token = caller(EVERYTHING)

    async def work(client):
        return json.loads((await client.call_tool("meta_seen", {})).content[0].text)

    seen = run(gateway.url("/tools/mcp"), token, work)
    client = next(
        s
        for s in spans.get_finished_spans()
        if s.kind == SpanKind.CLIENT and s.name == "tools/call meta_seen"
    )

    version, trace_id, span_id, flags = seen["traceparent"].split("-")
    assert (version, int(flags, 16) & 1) == ("00", 1)  # sampled
    assert int(trace_id, 16) == client.context.trace_id
    assert int(span_id, 16) == client.context.span_id


def test_an_incoming_trace_context_is_the_parent_and_a_tool_error_is_error_type_tool_error(
    gateway, upstream, spans, caller
):
    token = caller(EVERYTHING)
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    async def work(client):
        from mcp_types import RequestParamsMeta

        result = await client.call_tool("broken", {}, meta=RequestParamsMeta(traceparent=parent))
        return result.is_error

    assert run(gateway.url("/tools/mcp"), token, work) is True
    server = next(
        s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER and s.name == "tools/call broken"
    )

    assert server.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert server.parent.span_id == 0xB7AD6B7169203331
    assert server.attributes["error.type"] == "tool_error"
    assert server.status.status_code == StatusCode.ERROR


def test_a_refused_call_is_an_event_with_its_reason_and_never_reaches_the_upstream(
    gateway, upstream, spans, caller
):
    token = caller({"server": "/tools", "methods": ["*"], "tools": ["add"]})

    async def work(client):
        try:
            await client.call_tool("broken", {})
        except MCPError as error:
            return str(error)

    assert "may not call tool 'broken'" in run(gateway.url("/tools/mcp"), token, work)
    found = [s for s in spans.get_finished_spans() if s.name == "tools/call broken"]

    assert [s.kind for s in found] == [SpanKind.SERVER]  # no CLIENT span: nothing went upstream
    event = found[0].events[0]
    assert event.name == "gateway.refusal"
    assert "may not call tool 'broken'" in event.attributes["reason"]
    assert found[0].attributes["error.type"] == "-32001"  # the gateway's refusal code (docs/errors.md)


def test_an_a2a_send_message_has_its_span_with_the_task(gateway, agent, caller, spans):  # noqa: F811
    token = caller({"server": "/echo", "methods": ["*"]})

    task = a2a_run(gateway.url("/echo/a2a"), token, lambda client: a2a_send(client, "hello"), streaming=False)
    sent = by_name(spans)["SendMessage"]

    assert sent.kind == SpanKind.SERVER
    assert sent.attributes["a2a.method.name"] == "SendMessage"
    assert sent.attributes["a2a.task.id"] == task.id
    assert sent.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert sent.attributes["gen_ai.agent.name"] == "Echo"


class _Receiver(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append((self.path, request))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        return None


def test_spans_reach_a_real_otlp_receiver_when_the_standard_variable_names_it(
    gateway, upstream, caller, monkeypatch
):
    _Receiver.received = []
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    monkeypatch.setenv(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{receiver.server_port}/v1/traces"
    )
    monkeypatch.setenv("OTEL_SERVICE_NAME", "registry-under-test")
    try:
        assert tracing.configure() is True
        token = caller(EVERYTHING)

        async def work(client):
            return (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text

        assert run(gateway.url("/tools/mcp"), token, work) == "2"
        tracing.flush()
    finally:
        tracing.disable()
        receiver.shutdown()

    paths = {path for path, _ in _Receiver.received}
    spans = [
        (resource.resource, span)
        for _, request in _Receiver.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = sorted(span.name for _, span in spans)
    services = {
        attribute.value.string_value
        for resource, _ in spans
        for attribute in resource.attributes
        if attribute.key == "service.name"
    }
    assert paths == {"/v1/traces"}
    assert "tools/call add" in names and names.count("tools/call add") == 2  # the SERVER and CLIENT spans
    assert services == {"registry-under-test"}


def test_a_request_refused_whole_by_a_quarantine_is_a_span_with_the_reason(
    gateway, upstream, spans, caller, admin_user
):
    from limits.services import quarantine_set

    quarantine_set(actor=admin_user, kind="server", name="/tools", reason="leaking data, under review")
    token = caller(EVERYTHING)

    async def work(client):
        return await client.list_tools()

    with pytest.raises(Exception, match="unhandled errors"):  # the SDK's initialize is refused (403)
        run(gateway.url("/tools/mcp"), token, work)
    [refused] = [s for s in spans.get_finished_spans() if s.name == "POST"]

    assert refused.kind == SpanKind.SERVER
    assert (refused.attributes["url.path"], refused.attributes["http.response.status_code"]) == (
        "/tools/mcp",
        403,
    )
    assert refused.events[0].attributes["reason"] == "Quarantined by an operator: leaking data, under review"
    assert refused.status.status_code == StatusCode.ERROR
