"""Signed agent cards (A2A's JWS `AgentCardSignature`s): what a signature must look like to be kept, and
the card a signed register or PUT body carries, kept as published and served as it is (agents/a2a.py,
agents/cards.py): a rewrite would break its signatures. The registry does not verify them."""

from collections.abc import Mapping

from agents.a2a import Invalid, _object, _text

SIGNATURE_MAX_LENGTH = 16_384
BASE64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
# What a register or PUT body carries that is the registry's, not the card's: left out of a signed card.
# (`provider` too when it is the registry's vendor key, a string; A2A's provider is an object.)
REGISTRY_ONLY_FIELDS = (
    "path",
    "visibility",
    "headers",
    "upstream_auth",
    "user_secret_header",
    "tags",
    "license",
    "provider_organization",
    "provider_url",
)


def read_signature(raw) -> dict:
    """One JWS signature of a card (A2A `AgentCardSignature`: `protected` and `signature`, base64url, and
    an optional unprotected `header` object), kept as given."""
    raw = _object(raw, "signature")
    for name in ("protected", "signature"):
        value = _text(raw.get(name), name, max_length=SIGNATURE_MAX_LENGTH, required=True)
        if not set(value) <= BASE64URL:
            raise Invalid(f"'{name}' must be base64url (no padding).")
    if "header" in raw:
        _object(raw["header"], "'header'")
    return dict(raw)


def signed_card_of(body: Mapping) -> dict:
    """The card a signed register or PUT body carries, as the agent signed it: the body without the
    registry's own fields."""
    return {
        name: value
        for name, value in body.items()
        if name not in REGISTRY_ONLY_FIELDS and not (name == "provider" and not isinstance(value, Mapping))
    }
