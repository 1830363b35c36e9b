"""The registry as an OAuth client of upstream servers users sign in to (`user_oauth`), as the MCP SDK's
client would: `discovery.py` finds the server's authorization server (RFC 9728, RFC 8414) under the one
outbound rule, `client.py` names the registry to it (a Client ID Metadata Document, or dynamic
registration), `flow.py` runs the sign-in (PKCE, state bound to the user's session), `tokens.py`
exchanges and refreshes tokens. What a sign-in stores is sealed (connections/sealed.py)."""
