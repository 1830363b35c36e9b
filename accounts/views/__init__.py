"""Session pages of the accounts app: login and logout (`login.py`); the tokens page is oauth's."""

from accounts.views.login import (
    HOME,
    LOGIN_PAGE,
    back_to,
    login_unprefixed_view,
    login_url,
    login_view,
    logout_unprefixed_view,
    logout_view,
    provider_callback_view,
    provider_login_view,
    safe_next,
    session_page,
)

__all__ = [
    "HOME",
    "LOGIN_PAGE",
    "back_to",
    "login_unprefixed_view",
    "login_url",
    "login_view",
    "logout_unprefixed_view",
    "logout_view",
    "provider_callback_view",
    "provider_login_view",
    "safe_next",
    "session_page",
]
