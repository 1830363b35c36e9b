"""Session pages of the accounts app: login (`login.py`) and tokens (`tokens.py`)."""

from accounts.views.login import (
    HOME,
    LOGIN_PAGE,
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
from accounts.views.tokens import token_revoke_form, tokens

__all__ = [
    "HOME",
    "LOGIN_PAGE",
    "login_unprefixed_view",
    "login_url",
    "login_view",
    "logout_unprefixed_view",
    "logout_view",
    "provider_callback_view",
    "provider_login_view",
    "safe_next",
    "session_page",
    "token_revoke_form",
    "tokens",
]
