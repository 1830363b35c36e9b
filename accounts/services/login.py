"""Form login with failure limits per username and per client address (token buckets in Redis)."""

from __future__ import annotations

from django.contrib.auth import authenticate

from accounts.models import User

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


def login_attempt(*, request, username: str, password: str) -> User:
    """The user these credentials name, or LoginRefused. The limits live in the password backend
    (`accounts/backends.py`), so the admin's login obeys them too."""
    user = authenticate(request, username=username, password=password) if username and password else None
    if user is None:
        throttled = getattr(request, "login_throttled", None)
        if throttled is not None:
            raise LoginRefused(TOO_MANY_FAILURES, retry_after=throttled.retry_after)
        raise LoginRefused(INVALID_CREDENTIALS)
    return user
