"""The built-in gateway: MCP traffic to `/<server path>/mcp` is authenticated, authorized message by
message and streamed to the server's `proxy_pass_url` (an ASGI route ahead of Django's middleware).

- `app.py`: the ASGI application: which requests are the gateway's, and the checks of each.
- `paths.py`: which server paths a request path could name (raw path checked, longest prefix first).
- `routing.py`: the caller and the server, from the per-process caches or the database.
- `messages.py`: the JSON-RPC rules: which messages a principal may send, denied answers, tools/list
  filtering, SSE event rewriting.
- `forwarding.py`: the exchange with the server, streamed both ways, stopped when the client leaves.
- `upstream.py`: the shared HTTP client pool (aiohttp) and its timeouts.
- `sse_sessions.py`: the SSE transport's message endpoints, kept in Redis.
- `telemetry.py`: tool_execution and protocol_latency metrics, session facts in Redis.
- `handoff.py` and `nginx.py`: nginx in front (`manage.py nginx_config`, X-Accel-Redirect handoff).
"""
