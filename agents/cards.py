"""The agent's card as the gateway serves it (`/<agent path>/a2a/.well-known/agent-card.json`): the
registry's stored card (agents/a2a.py) with every interface the gateway carries pointing at the gateway,
in A2A v1.0 (`supportedInterfaces`) and v0.3 (`url`, `preferredTransport`, `protocolVersion`) alike, and
the gateway's own security scheme: a caller presents its registry token, never the agent's credential.

A card published with JWS `signatures` is served as it was published: a rewrite would break them, so its
interface URLs stay the agent's own (the gateway still carries calls sent to `<agent path>/a2a`)."""

from __future__ import annotations

from agents.a2a import a2a_card
from agents.models import Agent

CARRIED = ("JSONRPC", "HTTP+JSON")  # the bindings the gateway carries
SECURITY_SCHEME = "registry"
SIGNED_CARD_NOTE = (
    "signed: served as published, since a rewrite would break its signatures, so its URLs are the agent's own"
)


def gateway_url(agent: Agent, base_url: str) -> str:
    return f"{base_url}{agent.path}/a2a"


def gateway_card(agent: Agent, base_url: str) -> dict:
    if agent.signed_card is not None:
        return agent.signed_card
    card = a2a_card(agent)
    url = gateway_url(agent, base_url)
    carried = [i for i in card["supportedInterfaces"] if i["protocolBinding"] in CARRIED]
    interfaces = [{**interface, "url": url} for interface in carried] or [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    legacy = next((i for i in interfaces if str(i.get("protocolVersion", "")).startswith("0.")), None)
    card["supportedInterfaces"] = interfaces
    card["url"], card["preferredTransport"] = url, interfaces[0]["protocolBinding"]
    card["protocolVersion"] = legacy["protocolVersion"] if legacy else "0.3.0"
    card["securitySchemes"] = {SECURITY_SCHEME: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    card["securityRequirements"] = [{"schemes": {SECURITY_SCHEME: {"list": []}}}]
    return card
