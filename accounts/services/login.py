"""Form login with failure limits per username and per client address (token buckets in Redis)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate

from accounts.models import User
from registry_site import ratelimit

INVALID_CREDENTIALS = "Invalid username or password."  # never says which of the two was wrong
TOO_MANY_FAILURES = "Too many failed login attempts. Try again later."


class LoginRefused(Exception):
    def __init__(self, message: str, *, retry_after: int = 0):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    @property
    def rate_limited(self) -> bool:
        return self.retry_after > 0


def _buckets(username: str, address: str) -> list[tuple[str, int]]:
    return [
        (f"login:user:{username.strip().lower()}", settings.LOGIN_FAILURES_PER_USER),
        (f"login:addr:{address}", settings.LOGIN_FAILURES_PER_ADDRESS),
    ]


def login_attempt(*, request, username: str, password: str) -> User:
    """The user these credentials name, or LoginRefused. Failures spend a token of both buckets; an
    empty bucket refuses even correct credentials until it refills."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    buckets = _buckets(username, request.META.get("REMOTE_ADDR", ""))
    for key, capacity in buckets:
        state = ratelimit.peek(key, capacity=capacity, period_seconds=window)
        if not state.allowed:
            raise LoginRefused(TOO_MANY_FAILURES, retry_after=state.retry_after)
    user = authenticate(request, username=username, password=password) if username and password else None
    if user is None or user.is_service_account:
        for key, capacity in buckets:
            ratelimit.take(key, capacity=capacity, period_seconds=window)
        raise LoginRefused(INVALID_CREDENTIALS)
    ratelimit.reset(buckets[0][0])
    return user
