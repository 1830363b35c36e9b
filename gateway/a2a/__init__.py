"""The A2A adapter of the gateway (`/<agent path>/a2a`): the same front (gateway/front.py) and the same
decision (gateway/decision.py) as MCP, with what is A2A's own: `app.py` serves both bindings (JSON-RPC and
HTTP+JSON, v1.0 and v0.3), `calls.py` reads a request and words a refusal in the binding's shape,
`params.py` reads what a request names as the agent's own models do, `tasks.py` keeps tasks to the caller
that created them, `pushes.py` checks push-notification URLs, `asks.py` asks for a credential the caller
has not connected (an `auth-required` task, or the binding's error), `metrics.py` reports each call. The
agent's credential is the one resolver's (connections/resolver.py), as every target's; its card with the
gateway's URL is the agents app's (agents/cards.py)."""
