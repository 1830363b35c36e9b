"""A user's sign-in kept fresh: refreshed when it expires within REFRESH_MARGIN_SECONDS, or when the
upstream refused its access token, by exactly one process per connection across every host (a Redis lock;
the others wait for it and read what it stored). A refusal by the authorization server removes the
connection, audited, and the caller is asked to sign in again; an authorization server that cannot be
reached leaves the connection as it is."""

from __future__ import annotations

from datetime import timedelta

import redis
from django.utils import timezone

from connections.models import UpstreamCredential
from connections.oauth import tokens as oauth_tokens
from connections.sealed import open_for
from connections.services import credential_refresh_failed, credential_refreshed
from core.redis_clients import sync_client
from core.sealing import Unsealable

REFRESH_MARGIN_SECONDS = 30
LOCK_SECONDS = 30  # longer than the token request's own deadline
WAIT_SECONDS = 15


class SignInLost(Exception):
    """The connection is gone (refused refresh, removed meanwhile): its user must sign in again."""


class SignInUnavailable(Exception):
    """The authorization server could not refresh the sign-in now; the connection stays."""


def expiring(credential: UpstreamCredential) -> bool:
    margin = timedelta(seconds=REFRESH_MARGIN_SECONDS)
    return credential.expires_at is not None and credential.expires_at - margin <= timezone.now()


def fresh(credential: UpstreamCredential, target, values: dict, *, rejected: str | None = None) -> dict:
    """The connection's values with an access token that is neither expiring nor `rejected` (the one the
    upstream just refused)."""
    if rejected is None and not expiring(credential):
        return values
    lock = sync_client().lock(
        f"registry:connections:refresh:{credential.pk}", timeout=LOCK_SECONDS, blocking_timeout=WAIT_SECONDS
    )
    try:
        acquired = lock.acquire()
    except redis.RedisError:
        raise SignInUnavailable("The sign-in could not be refreshed now (Redis).") from None
    if not acquired:
        raise SignInUnavailable("The sign-in is being refreshed by another process; try again.")
    try:
        current = (
            UpstreamCredential.objects.filter(pk=credential.pk)
            .select_related("server", "agent", "user")
            .first()
        )
        if current is None:
            raise SignInLost("The connection was removed.")
        try:
            values = open_for(current, target)
        except Unsealable:
            raise SignInLost("The target changed since the connection was made.") from None
        if values["access_token"] != (rejected or values["access_token"]) or (
            rejected is None and not expiring(current)
        ):
            credential.expires_at = current.expires_at
            return values  # another process refreshed it meanwhile
        try:
            grant = oauth_tokens.refresh(values, registered=current.origin)
        except oauth_tokens.TokenRefused as refused:
            credential_refresh_failed(credential=current, reason=str(refused))
            raise SignInLost(str(refused)) from None
        except oauth_tokens.TokenUnavailable as unavailable:
            raise SignInUnavailable(str(unavailable)) from None
        fresh_values = credential_refreshed(credential=current, target=target, values=values, grant=grant)
        credential.expires_at = current.expires_at
        return fresh_values
    finally:
        try:
            lock.release()
        except redis.RedisError:
            pass  # it expires on its own
