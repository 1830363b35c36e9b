"""Session pages of the accounts app: login and logout (`login.py`), stopping "view as" (`view_as.py`);
the tokens page is oauth's."""

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
from accounts.views.view_as import view_as_stop_view

__all__ = [
    "view_as_stop_view",
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
