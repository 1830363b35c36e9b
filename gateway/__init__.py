"""Everything that judges and carries gateway traffic: the built-in gateway (an ASGI route ahead of Django's
middleware for `/<server path>/mcp`, virtual servers at the same kind of URL, and, through the same front,
A2A agents at `/<agent path>/a2a`: gateway/a2a/), `/validate` (its twin for proxies) and nginx in front.
One pipeline for every kind of target (docs/gateway.md): front → caller and target → the one decision →
fair share → the one credential resolver (connections/resolver.py) → exchange → telemetry; each kind an
adapter. Every module, by what it does:

The shell and the caller
- `front.py`: the ASGI shell every target kind shares: raw path, CORS, one error answer, client gone.
- `app.py`: the MCP carrier: which requests are the gateway's, and the checks of each, in order.
- `paths.py`: which server paths a request path could name (raw path checked, longest prefix first).
- `routing.py`: the caller and the server (or virtual server), from the per-process caches or the database.
- `epochs.py`: the cache epochs a request is served under, read once and named.
- `headers.py`: which headers cross (one rule both ways), Host and Origin, headers against the body.

Judging
- `decision.py`: the one decision: audience, quarantine, the rule with operators' trust, then limits (and
  again at a virtual server's member).
- `jsonrpc.py`: the one reader of JSON-RPC bodies and the one method rule (the gateway and `/validate`).
- `messages.py`: a POST's messages sorted into forwarded and denied; tool lists cut in answers.
- `pins_seen.py`: definitions a live list showed that are not pinned, recorded before the list is answered.
- `quotas.py`: limits and quarantines applied, and worded as each protocol has a refusal.

Carrying
- `exchange.py`: the one exchange stage: credential, fair-share slot, the adapter's attempt, one retry.
- `fair_share.py`: the slots of open exchanges per caller and per upstream origin that every exchange holds.
- `forwarding.py`: the exchange with the server, streamed both ways, stopped when the client leaves.
- `streams.py`: event streams read as the standard says (CRLF, LF, CR), filtered or passed unbuffered.
- `upstream.py`: the shared HTTP client pool (aiohttp) and its timeouts.
- `sessions.py`: sessions bound to the caller that opened them, and the SSE transport's endpoints.
- `ordering.py`: a session's POST waits for the GET stream opened before it.
- `deferred.py`: sessions the gateway holds for a caller who has not connected their credential yet.
- `asking.py`: asking the caller's user for a credential inside the conversation.
- `sign_in.py`: a server refusing the caller's sign-in, seen before the answer goes on.
- `telemetry.py`: tool_execution and protocol_latency metrics, session facts in Redis.

Virtual servers
- `virtual/`: the virtual-server adapter: answers, sessions, members and their judgement, merged lists
  and streams, the SSE transport (gateway/virtual/__init__.py).

A2A agents
- `a2a/`: the A2A adapter: both bindings, params read as the agent reads them, tasks owned by their
  caller, push-notification URLs checked, a missing credential asked for (gateway/a2a/__init__.py).

Proxies in front
- `handoff.py`, `nginx.py`, `management/commands/nginx_config.py`: nginx in front (X-Accel-Redirect).
- `api/validate.py`: `GET /validate`, the proxy's check of one call, judged as the gateway judges it.
"""
