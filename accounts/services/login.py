"""Form login with failure limits per username and per client address (token buckets in Redis)."""

from __future__ import annotations

from django.contrib.auth import authenticate

from accounts.models import User

INVALID_CREDENTIALS = "Invalid username or password."  # never says which of the two was wrong
TOO_MANY_FAILURES = "Too many failed login attempts. Try again later."
PROVIDER_FAILED = "Login with the identity provider failed."
# What an identity provider's callback may report (RFC 6749 §4.1.2.1), in the words the login page uses.
PROVIDER_ERRORS = {
    "access_denied": "The identity provider did not allow the login (it was refused or cancelled).",
    "temporarily_unavailable": "The identity provider is unavailable. Try again later.",
    "server_error": "The identity provider could not complete the login. Try again later.",
}
# The only texts the login page shows: its `?error=` names one of these, so nobody can put words of
# their own on the real login page with a link.
LOGIN_MESSAGES = frozenset(
    {INVALID_CREDENTIALS, TOO_MANY_FAILURES, PROVIDER_FAILED, *PROVIDER_ERRORS.values()}
)


def login_message(error: str) -> str:
    """The message to show for a login page's `?error=`: the text itself when the registry wrote it,
    else the generic failure (any other text came from whoever made the link)."""
    if not error:
        return ""
    return error if error in LOGIN_MESSAGES else "Login failed. Try again."


def provider_error_message(error: str) -> str:
    """The login page's message for an identity provider's callback error code."""
    return PROVIDER_ERRORS.get(error, PROVIDER_FAILED)


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
