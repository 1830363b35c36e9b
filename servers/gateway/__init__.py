"""The built-in gateway: MCP traffic to `/<server path>/mcp` is authenticated, authorized message by
message and streamed to the server's `proxy_pass_url` (an ASGI route ahead of Django's middleware).

- `paths.py`: which server a request path names (normalised, longest registered prefix).
- `messages.py`: the JSON-RPC rules: which messages a principal may send, denied answers, tools/list
  filtering, SSE event rewriting.
- `upstream.py`: the shared HTTP client pool.
- `sse_sessions.py`: the SSE transport's message endpoints, kept in Redis.
- `telemetry.py`: tool_execution and protocol_latency metrics, session facts in Redis.
- `app.py`: the ASGI application tying them together.
"""
