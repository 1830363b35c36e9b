"""The client command the conformance suite runs for its cross-app access scenario: it hands the suite's
server URL and context (MCP_CONFORMANCE_CONTEXT: the identity provider, the user's ID token, the client
at the authorization server) to the test that waits at HANDOFF_URL, which makes the registry reach that
server as the user (tests/conformance/test_cross_app_access.py), and exits as that went."""

import json
import os
import sys
import urllib.request

request = urllib.request.Request(
    os.environ["HANDOFF_URL"],
    data=json.dumps(
        {"server_url": sys.argv[-1], "context": json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"])}
    ).encode(),
    headers={"Content-Type": "application/json"},
    method="POST",
)
with urllib.request.urlopen(request, timeout=120) as answer:  # noqa: S310 (the test's own loopback URL)
    sys.stdout.write(answer.read().decode() + "\n")
