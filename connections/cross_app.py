"""Cross-app access (the `cross_app_access` mode of a server or an agent): the gateway reaches the target
as the caller with their company identity, no sign-in page of the target in between. The caller's last
OpenID Connect login to the registry (accounts/models.ProviderSignIn: its ID token while fresh, else its
refresh token) is exchanged at that identity provider for an identity assertion (ID-JAG, RFC 8693) naming
the target's authorization server (found as the user-OAuth mode finds it) and the target; the assertion
is presented there (RFC 7523 `jwt-bearer`) for an access token, which is kept sealed like any connection
until it expires.

- One exchange at a time per caller and target across every process and host (a Redis lock; the others
  wait and read what it stored), so concurrent calls make one exchange.
- A token the target refused (401) is exchanged again once (`rejected`).
- The identity provider asking for a stronger login (`insufficient_user_authentication`, here or from the
  target) and a login that no longer exchanges become the in-protocol ask, with the registry's login URL
  for that provider; its policy refusing is said as it is.
- A refusal is remembered for a minute or until the user logs in again, so a session's requests ask the
  identity provider once.
- Every exchange is audited, never a token (connections/services.py)."""

from __future__ import annotations

import time
from datetime import timedelta

import jwt
import redis
from django.core.cache import cache
from django.utils import timezone

from accounts.models import ProviderSignIn
from accounts.selectors import oidc_app_of
from connections.choices import Purpose
from connections.models import UpstreamClient, UpstreamCredential, of_target
from connections.oauth import tokens
from connections.oauth.client import client_secret_of
from connections.oauth.discovery import UpstreamOAuthRefused, discover, fetch_checked
from connections.sealed import fits, open_for
from connections.services import credential_cross_app_store, cross_app_refused
from core import sealing
from core.redis_clients import sync_client
from core.untrusted import InputRejected, json_loads
from servers.upstream_auth import CredentialMissing, CredentialUnavailable

MARGIN_SECONDS = 30  # a token expiring sooner is exchanged again first
LOCK_SECONDS = 30
WAIT_SECONDS = 20
METADATA_SECONDS = 3600
REFUSAL_SECONDS = 60  # a refusal is answered again from memory, without asking anyone
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
REFRESH_TOKEN = "urn:ietf:params:oauth:token-type:refresh_token"
STEP_UP = "insufficient_user_authentication"
LOGIN_PATH = "/login"


def login_path(sign_in: ProviderSignIn | None) -> str:
    """Where the caller logs in again through their identity provider (straight to it when known)."""
    return f"/api/auth/auth/{sign_in.provider}" if sign_in is not None else LOGIN_PATH


def step_up(target, sign_in: ProviderSignIn | None = None) -> CredentialMissing:
    """The in-protocol ask for a stronger login at the identity provider."""
    return CredentialMissing(
        target.path,
        f"{target.path} needs a stronger login at your identity provider: log in to the registry again, then "
        "try again.",
        login_path(sign_in),
    )


def headers(target, user, *, rejected: str | None = None) -> tuple[dict[str, str], float]:
    """(the caller's outbound headers for `target`, until when on the monotonic clock they may be reused);
    `rejected`: the token the target just refused."""
    credential = _kept(target, user)
    token = _usable(credential, target, rejected)
    if token is None:
        lock = sync_client().lock(
            f"registry:connections:cross-app:{target.TARGET_KIND}:{target.pk}:{user.pk}",
            timeout=LOCK_SECONDS,
            blocking_timeout=WAIT_SECONDS,
        )
        try:
            acquired = lock.acquire()
        except redis.RedisError:
            raise CredentialUnavailable("Your company identity could not be exchanged now (Redis).") from None
        if not acquired:
            raise CredentialUnavailable(
                "Your company identity is being exchanged by another call; try again."
            )
        try:
            credential = _kept(target, user)  # another process may have exchanged meanwhile
            token = _usable(credential, target, rejected)
            if token is None:
                credential = _exchanged(target, user)
                token = open_for(credential, target)["access_token"]
        finally:
            try:
                lock.release()
            except redis.RedisError:
                pass  # it expires on its own
    until = float("inf")
    if credential.expires_at is not None:
        left = credential.expires_at - timedelta(seconds=MARGIN_SECONDS) - timezone.now()
        until = time.monotonic() + left.total_seconds()
    return {"Authorization": f"Bearer {token}"}, until


def _kept(target, user) -> UpstreamCredential | None:
    return UpstreamCredential.objects.filter(**of_target(target), user=user, purpose=Purpose.USER).first()


def _usable(credential: UpstreamCredential | None, target, rejected: str | None) -> str | None:
    """The kept token, unless there is none, it is for the target as it was, expiring, or `rejected`."""
    if credential is None or not fits(credential, target):
        return None
    if credential.expires_at is not None and credential.expires_at - timezone.now() <= timedelta(
        seconds=MARGIN_SECONDS
    ):
        return None
    try:
        token = open_for(credential, target)["access_token"]
    except sealing.Unsealable:
        return None
    return None if token == rejected else token


def _exchanged(target, user) -> UpstreamCredential:
    """A new token for the caller at `target`, kept; the ask or the refusal the gateway answers with."""
    sign_in = ProviderSignIn.objects.filter(user=user).first()
    if sign_in is None:
        raise CredentialMissing(
            target.path,
            f"{target.path} is reached with your company identity: log in to the registry through your "
            "identity provider, then try again.",
            LOGIN_PATH,
        )
    login = f"{sign_in.pk}:{sign_in.signed_in_at.timestamp()}"
    remembered = f"connections:cross-app:refused:{target.TARGET_KIND}:{target.pk}:{login}"
    if (refusal := cache.get(remembered)) is not None:  # until the user logs in again, or a minute passes
        raise CredentialMissing(target.path, *refusal)
    try:
        return _exchanged_for(target, user, sign_in)
    except CredentialMissing as missing:
        cache.set(remembered, (str(missing), missing.connect_path), REFUSAL_SECONDS)
        raise


def _exchanged_for(target, user, sign_in: ProviderSignIn) -> UpstreamCredential:
    try:
        subject = _subject(sign_in)
        app = oidc_app_of(sign_in.provider)
        if app is None:
            raise _Failed("missing", f"The identity provider {sign_in.provider} is no longer configured.")
        idp = {
            "token_endpoint": _idp_token_endpoint(sign_in.issuer),
            "client_id": app["client_id"],
            "client_secret": app["secret"],
        }
        authorization = discover(target.upstream_url, target.TARGET_KIND)
        assertion = tokens.id_jag_exchange(
            idp,
            **subject,
            audience=authorization.issuer,
            resource=authorization.resource,
            registered=sign_in.issuer,
        )
        grant = tokens.jwt_bearer(
            _client_at(authorization, assertion), assertion=assertion, registered=target.upstream_url
        )
    except _Failed as failed:
        cross_app_refused(target=target, user=user, reason=str(failed))
        if failed.kind == "step_up":
            raise step_up(target, sign_in) from None
        where = login_path(sign_in) if failed.kind == "missing" else None
        raise CredentialMissing(target.path, f"{target.path}: {failed}", where) from None
    except (UpstreamOAuthRefused, tokens.TokenUnavailable) as unavailable:
        cross_app_refused(target=target, user=user, reason=str(unavailable))
        raise CredentialUnavailable(f"Your company identity could not be exchanged: {unavailable}") from None
    except tokens.TokenRefused as refused:
        cross_app_refused(target=target, user=user, reason=str(refused))
        if refused.error == STEP_UP:
            raise step_up(target, sign_in) from None
        if refused.error == "invalid_grant":  # the login no longer exchanges: log in again
            raise CredentialMissing(
                target.path, f"Your login no longer reaches {target.path}: {refused}", login_path(sign_in)
            ) from None
        raise CredentialMissing(target.path, f"{target.path} is not open to you: {refused}", None) from None
    return credential_cross_app_store(
        target=target, user=user, grant=grant, idp=sign_in.issuer, audience=authorization.issuer
    )


class _Failed(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _subject(sign_in: ProviderSignIn) -> dict:
    """The subject token of the exchange: the login's ID token while fresh, else its refresh token."""
    try:
        values = sign_in.opened()
    except sealing.Unsealable:
        raise _Failed("missing", "Your login no longer opens: log in again.") from None
    if values.get("id_token") and sign_in.id_token_fresh(MARGIN_SECONDS):
        return {"subject_token": values["id_token"], "subject_token_type": ID_TOKEN}
    if values.get("refresh_token"):
        return {"subject_token": values["refresh_token"], "subject_token_type": REFRESH_TOKEN}
    raise _Failed("missing", "Your login to the registry has expired: log in again.")


def _idp_token_endpoint(issuer: str) -> str:
    """The identity provider's token endpoint, from its OpenID Connect metadata (kept an hour)."""
    key = f"connections:cross-app:idp-token-endpoint:{issuer}"
    endpoint = cache.get(key)
    if endpoint is None:
        answer = fetch_checked(
            issuer.rstrip("/") + "/.well-known/openid-configuration",
            "the identity provider's metadata",
            registered=issuer,
        )
        try:
            document = json_loads(answer.body, "identity provider metadata")
        except InputRejected as rejected:
            raise UpstreamOAuthRefused(
                f"The identity provider's metadata is not usable: {rejected}"
            ) from None
        endpoint = document.get("token_endpoint") if isinstance(document, dict) else None
        if answer.status != 200 or not isinstance(endpoint, str):
            raise UpstreamOAuthRefused(f"The identity provider {issuer} publishes no token endpoint.")
        cache.set(key, endpoint, METADATA_SECONDS)
    return endpoint


def _client_at(authorization, assertion: str) -> dict:
    """How the registry authenticates at the target's authorization server: as the client the assertion
    names (the identity provider decides it), with the secret an operator entered for it there, if any."""
    try:
        client_id = jwt.decode(assertion, options={"verify_signature": False}).get("client_id")
    except jwt.PyJWTError:
        raise tokens.TokenUnavailable("The identity provider's assertion is not a JWT.") from None
    if not isinstance(client_id, str) or not client_id:
        raise tokens.TokenUnavailable("The identity provider's assertion names no client.")
    issuer = authorization.issuer.rstrip("/")  # as operators' clients are kept (connections/services.py)
    stored = UpstreamClient.objects.filter(issuer=issuer, client_id=client_id).first()
    secret = client_secret_of(stored) if stored is not None else None
    return {"token_endpoint": authorization.token_endpoint, "client_id": client_id, "client_secret": secret}
