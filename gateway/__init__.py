"""Everything that judges and carries MCP traffic: the built-in gateway (an ASGI route ahead of Django's
middleware for `/<server path>/mcp`), `/validate` (its twin for proxies) and nginx in front.

- `app.py`: the ASGI application: which requests are the gateway's, and the checks of each, in order.
- `paths.py`: which server paths a request path could name (raw path checked, longest prefix first).
- `routing.py`: the caller and the server, from the per-process caches or the database.
- `headers.py`: which headers cross (one rule both ways), Host and Origin, headers against the body.
- `jsonrpc.py`: the one reader of JSON-RPC bodies and the one method rule (the gateway and `/validate`).
- `messages.py`: a POST's messages sorted into forwarded and denied; tool lists cut in answers.
- `streams.py`: event streams read as the standard says (CRLF, LF, CR), filtered or passed unbuffered.
- `sessions.py`: sessions bound to the caller that opened them, and the SSE transport's endpoints.
- `ordering.py`: a session's POST waits for the GET stream opened before it.
- `limits.py`: fair shares of open exchanges per caller and per server origin.
- `forwarding.py`: the exchange with the server, streamed both ways, stopped when the client leaves.
- `upstream.py`: the shared HTTP client pool (aiohttp) and its timeouts.
- `telemetry.py`: tool_execution and protocol_latency metrics, session facts in Redis.
- `handoff.py`, `nginx.py`, `management/commands/nginx_config.py`: nginx in front (X-Accel-Redirect).
- `api/validate.py`: `GET /validate`, the proxy's check of one call, by the same rule.
"""
