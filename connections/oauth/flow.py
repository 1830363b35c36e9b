"""A user's sign-in at the authorization server of an upstream MCP server or A2A agent, from our connect page
to our callback: authorization code with PKCE S256, the target as `resource` (RFC 8707), the scopes it
names (with those it asked for since: step-up), and `iss` checked on the way back (RFC 9207).

The `state` is a random key of a record in Redis that lives STATE_SECONDS and is read once (GETDEL): it
holds the PKCE verifier and the client's secret (sealed: neither ever leaves the registry) and the user
who started the flow. A callback in another user's session connects nobody (the account-swap check), and
a replayed callback finds no record."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from oauthlib.common import add_params_to_uri
from oauthlib.oauth2 import WebApplicationClient

from connections.choices import Purpose
from connections.models import UpstreamCredential, of_target
from connections.oauth.client import identity_for
from connections.oauth.discovery import discover
from connections.oauth.tokens import Grant, TokenRefused, TokenUnavailable, exchange
from core import sealing
from core.redis_clients import sync_client

STATE_SECONDS = 600
VERIFIER_LENGTH = 64
TEXT_MAX = 200
AGAIN = "start again from your connections page"


class SignInRefused(Exception):
    """The sign-in cannot go on; the message is safe to show the user."""


@dataclass(frozen=True)
class SignedIn:
    target_url: str  # the target's URL when the sign-in began: the tokens are for it only
    kind: str  # the target's kind (a server, an agent: core/targets.py)
    target_id: int
    user_id: int | None
    purpose: str
    values: dict
    grant: Grant


def _key(state: str) -> str:
    return f"registry:connections:sign-in:{state}"


def _context(state: str) -> str:
    return f"upstream-sign-in|{state}"


def start(*, target, by, purpose: str, base: str) -> str:
    """The authorization URL that begins a sign-in at `target` (a server or an agent) by the user `by`, for
    their own calls or (purpose `discovery`) the registry's (UpstreamOAuthRefused when the target's
    sign-in cannot be used)."""
    user = by if purpose != Purpose.DISCOVERY else None
    authorization = discover(target.upstream_url, target.TARGET_KIND)
    identity = identity_for(authorization, server_url=target.upstream_url, base=base)
    client = WebApplicationClient(identity.client_id)
    verifier = client.create_code_verifier(VERIFIER_LENGTH)
    state = secrets.token_urlsafe(32)
    redirect_uri = identity.redirect_uri
    scopes = _scopes_wanted(target, user, purpose, authorization.scopes)
    record = {
        "kind": target.TARGET_KIND,
        "target": target.pk,
        "by": by.pk,
        "user": user.pk if user is not None else None,
        "purpose": purpose,
        "target_url": target.upstream_url,
        "verifier": verifier,
        "redirect_uri": redirect_uri,
        "iss_required": authorization.iss_parameter_supported,
        "values": {
            "client_id": identity.client_id,
            "client_secret": identity.client_secret,
            "token_endpoint": authorization.token_endpoint,
            "revocation_endpoint": authorization.revocation_endpoint,
            "issuer": authorization.issuer,
            "resource": authorization.resource,
        },
    }
    sealed = sealing.seal(json.dumps(record).encode(), context=_context(state))
    sync_client().set(_key(state), sealed, ex=STATE_SECONDS)
    params = [
        ("response_type", "code"),
        ("client_id", identity.client_id),
        ("redirect_uri", redirect_uri),
        ("state", state),
        ("code_challenge", client.create_code_challenge(verifier, "S256")),
        ("code_challenge_method", "S256"),
        ("resource", authorization.resource),
    ]
    if scopes:
        params.append(("scope", " ".join(scopes)))
    return add_params_to_uri(authorization.authorization_endpoint, params)


def finish(*, user, params) -> SignedIn:
    """The tokens of the sign-in the callback's `params` complete, in the session of `user`, who must be
    the one who began it."""
    state = params.get("state") or ""
    raw = sync_client().getdel(_key(state[:100])) if state else None
    if raw is None:
        raise SignInRefused(f"This sign-in has expired or was already used: {AGAIN}.")
    try:
        record = json.loads(sealing.unseal(raw.decode(), context=_context(state)))
    except sealing.Unsealable:
        raise SignInRefused(f"This sign-in cannot be read any more: {AGAIN}.") from None
    if record["by"] != user.pk:
        raise SignInRefused(
            "This sign-in was started by another account than yours: nothing was connected. "
            "If you did not start it, someone may be trying to connect their account to yours."
        )
    values = record["values"]
    if error := params.get("error"):
        said = params.get("error_description") or error
        raise SignInRefused(f"The sign-in was not completed: {said[:TEXT_MAX]}.")
    issuer = params.get("iss")
    if (issuer is not None or record["iss_required"]) and issuer != values["issuer"]:
        raise SignInRefused(
            "The answer did not come from the authorization server the sign-in began at: nothing was "
            "connected."
        )
    if not params.get("code"):
        raise SignInRefused(f"The answer carries no authorization code: {AGAIN}.")
    registered = record["target_url"]
    try:
        grant = exchange(
            values,
            code=params["code"],
            verifier=record["verifier"],
            redirect_uri=record["redirect_uri"],
            registered=registered,
        )
    except (TokenRefused, TokenUnavailable) as failed:
        raise SignInRefused(f"The sign-in could not be completed: {failed}") from None
    return SignedIn(
        record["target_url"],
        record["kind"],
        record["target"],
        record["user"],
        record["purpose"],
        values,
        grant,
    )


def _scopes_wanted(target, user, purpose: str, named: tuple[str, ...]) -> list[str]:
    """The target's scopes, and those an earlier connection got or was asked for since (step-up)."""
    wanted = list(named)
    earlier = UpstreamCredential.objects.filter(**of_target(target), user=user, purpose=purpose).first()
    if earlier is not None:
        for scope in f"{earlier.scopes} {earlier.wanted_scopes}".split():
            if scope not in wanted:
                wanted.append(scope)
    return wanted
