"""An MCP server offering what the official conformance suite (`@modelcontextprotocol/conformance`) asks of
a server: its scenarios name the tools, resources and prompts below and check their answers. Built with
the official Python SDK (2.x), served by uvicorn on loopback by `tests/conformance/test_conformance.py`.

Server-to-client requests (sampling, elicitation) ride the stream of the `tools/call` they belong to
(`related_request_id`), as the SDK recommends: a request on the session's standalone GET stream is lost
when that stream is not open yet.
"""

from __future__ import annotations

import asyncio
import base64
import json

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import BaseModel, Field

from tests.mcp_servers import MemoryEventStore

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="


def build() -> MCPServer:
    """A fresh server (no state shared between test runs)."""
    server = MCPServer(name="registry-conformance-server", version="1.0.0", log_level="WARNING")
    _tools(server)
    _interactive_tools(server)
    _resources(server)
    _prompts(server)
    _handlers(server)
    return server


def app():
    """The streamable-HTTP application, resumable (its events are kept) and polling quickly."""
    return build().streamable_http_app(event_store=MemoryEventStore(), retry_interval=100)


def _tools(server: MCPServer) -> None:
    @server.tool()
    def test_simple_text() -> str:
        """Answers with one text block."""
        return "This is a simple text response for testing."

    @server.tool()
    def test_image_content() -> list[types.ImageContent]:
        """Answers with one image."""
        return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]

    @server.tool()
    def test_audio_content() -> list[types.AudioContent]:
        """Answers with one audio clip."""
        return [types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")]

    @server.tool()
    def test_embedded_resource() -> list[types.EmbeddedResource]:
        """Answers with an embedded text resource."""
        contents = types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
        return [types.EmbeddedResource(type="resource", resource=contents)]

    @server.tool()
    def test_multiple_content_types() -> list[
        types.TextContent | types.ImageContent | types.EmbeddedResource
    ]:
        """Answers with text, an image and a resource."""
        contents = types.TextResourceContents(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test": "data", "value": 123}',
        )
        return [
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.EmbeddedResource(type="resource", resource=contents),
        ]

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Logs three messages while it runs."""
        for text in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.info(text)
            await asyncio.sleep(0.05)
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Reports progress three times; answers with its progress token."""
        for step in (0, 50, 100):
            await ctx.report_progress(progress=step, total=100, message=f"Completed step {step} of 100")
            await asyncio.sleep(0.05)
        meta = ctx.request_context.meta if ctx.request_context else None
        return str(meta.get("progress_token", 0) if meta else 0)

    @server.tool()
    def test_error_handling() -> str:
        """Always fails."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Closes its stream mid-call; the client resumes it."""
        await ctx.info("Before disconnect")
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        await ctx.info("After reconnect")
        return "Reconnection test completed"

    @server.tool(name="json_schema_2020_12_tool")
    def json_schema_2020_12_tool() -> str:
        """A tool whose input schema uses JSON Schema 2020-12 keywords."""
        return "ok"

    server._tool_manager._tools["json_schema_2020_12_tool"].parameters = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    }


class UserResponse(BaseModel):
    response: str = Field(description="User's response")


class Defaults(BaseModel):
    """Every primitive type with a default (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: str = Field(
        default="active",
        description="User status",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    verified: bool = Field(default=True, description="Verification status")


class Enums(BaseModel):
    """The enum shapes of SEP-1330."""

    untitledSingle: str = Field(
        description="Simple enum without titles",
        json_schema_extra={"enum": ["active", "inactive", "pending"]},
    )
    titledSingle: str = Field(
        description="Enum with titled options (oneOf)",
        json_schema_extra={
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ]
        },
    )
    untitledMulti: list[str] = Field(
        description="Multi-select without titles",
        json_schema_extra={"items": {"type": "string", "enum": ["read", "write", "execute"]}},
    )
    titledMulti: list[str] = Field(
        description="Multi-select with titled options",
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            }
        },
    )
    legacyEnum: str = Field(
        description="Legacy enum with enumNames",
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    )


def _interactive_tools(server: MCPServer) -> None:
    async def elicited(ctx: Context, message: str, schema: type[BaseModel], prefix: str) -> str:
        result = await ctx.elicit(message=message, schema=schema)
        content = result.data.model_dump_json() if result.action == "accept" else "{}"
        return f"{prefix}: action={result.action}, content={content}"

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's model to complete `prompt`."""
        result = await ctx.session.create_message(
            messages=[
                types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
            ],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        text = result.content.text if result.content.type == "text" else "No response"
        return f"LLM response: {text}"

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the user for a response."""
        return await elicited(ctx, message, UserResponse, "User response")

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks the user with a default for every field."""
        return await elicited(ctx, "Please provide user information", Defaults, "Elicitation result")

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks the user to pick from every enum shape."""
        message = "Please select values using different enum schema types"
        return await elicited(ctx, message, Enums, "Elicitation completed")


def _resources(server: MCPServer) -> None:
    @server.resource("test://static-text")
    def static_text() -> str:
        """A static text resource."""
        return "This is the content of the static text resource."

    @server.resource("test://static-binary")
    def static_binary() -> bytes:
        """A static binary resource (a PNG)."""
        return base64.b64decode(PNG)

    @server.resource("test://template/{id}/data")
    def template(id: str) -> str:
        """A resource template."""
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource("test://watched-resource")
    def watched() -> str:
        """A resource clients subscribe to."""
        return "Watched resource content"


def _prompts(server: MCPServer) -> None:
    def user(content) -> UserMessage:
        return UserMessage(role="user", content=content)

    @server.prompt()
    def test_simple_prompt() -> list[UserMessage]:
        """A prompt without arguments."""
        return [user(types.TextContent(type="text", text="This is a simple prompt for testing."))]

    @server.prompt()
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        """A prompt with two required arguments."""
        text = f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
        return [user(types.TextContent(type="text", text=text))]

    @server.prompt()
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        """A prompt that embeds a resource."""
        contents = types.TextResourceContents(
            uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
        )
        return [
            user(types.EmbeddedResource(type="resource", resource=contents)),
            user(types.TextContent(type="text", text="Please process the embedded resource above.")),
        ]

    @server.prompt()
    def test_prompt_with_image() -> list[UserMessage]:
        """A prompt with an image."""
        return [
            user(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            user(types.TextContent(type="text", text="Please analyze the image above.")),
        ]


def _handlers(server: MCPServer) -> None:
    subscribed: set[str] = set()

    async def set_level(ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)

    @server.completion()
    async def complete(ref, argument, context) -> types.Completion:
        return types.Completion(values=[], total=0, has_more=False)
