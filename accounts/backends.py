"""Password authentication with failure limits, for every door that checks a password: the registry's
login form, the Django admin's login, anything calling `authenticate()`.

Tokens are taken from the per-username and per-address buckets *before* the password is checked, so
parallel attempts cannot all be evaluated while the buckets still look full; a correct password gives
them back. A refusal raises PermissionDenied, which makes `authenticate()` stop at this backend: no other
backend checks the same password again."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from core import ratelimit

PATH = "accounts.backends.LimitedPasswordBackend"


@dataclass(frozen=True)
class Throttled:
    """Set on the request when the limits refused an attempt: how long until the next one may be tried."""

    retry_after: int


def _buckets(username: str, address: str) -> list[tuple[str, int]]:
    return [
        (f"login:user:{username.strip().lower()}", settings.LOGIN_FAILURES_PER_USER),
        (f"login:addr:{address}", settings.LOGIN_FAILURES_PER_ADDRESS),
    ]


class LimitedPasswordBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(self._username_field())
        if not username or not password:
            return None
        window = settings.LOGIN_FAILURE_WINDOW_SECONDS
        address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
        buckets = _buckets(username, address)
        taken = []
        for key, capacity in buckets:
            decision = ratelimit.take(key, capacity=capacity, period_seconds=window)
            if not decision.allowed:
                for done_key, done_capacity in taken:  # an attempt refused unevaluated costs nothing more
                    ratelimit.take(done_key, capacity=done_capacity, period_seconds=window, cost=-1)
                if request is not None:
                    request.login_throttled = Throttled(decision.retry_after)
                raise PermissionDenied("too many failed logins")
            taken.append((key, capacity))
        user = super().authenticate(request, username=username, password=password)
        if user is None or user.is_service_account:  # service accounts use client credentials only
            raise PermissionDenied("invalid credentials")
        ratelimit.reset(buckets[0][0])
        ratelimit.take(buckets[1][0], capacity=buckets[1][1], period_seconds=window, cost=-1)
        return user

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD
