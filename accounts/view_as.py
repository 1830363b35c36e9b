""" "View as this user": an administrator sees every surface of the console (pages, the dashboard's API,
the health websocket) with another user's rights, to check what that user is shown. It is read only:
while the session views as someone, every request that could change something is refused
(registry_site.middleware.ViewAsReadOnlyMiddleware, and the gateway), except stopping and logging out.
Starting and stopping are audited (accounts/services/view_as.py)."""

from __future__ import annotations

from dataclasses import replace

from accounts.choices import AuthMethod
from accounts.models import User
from accounts.principal import Principal, principal_for_user

VIEW_AS_KEY = "_registry_view_as"
STOP_PATH = "/view-as/stop"
READ_ONLY_MESSAGE = "You are viewing the console as another user, read only: stop viewing to make changes."


def viewing_as(session) -> str:
    """The username this session views the console as, or ""."""
    marker = session.get(VIEW_AS_KEY) if session is not None else None
    return str(marker.get("username", "")) if isinstance(marker, dict) else ""


def viewed_user(session) -> User | None:
    """The active user this session views the console as, or None."""
    marker = session.get(VIEW_AS_KEY) if session is not None else None
    if not isinstance(marker, dict):
        return None
    return User.objects.filter(pk=marker.get("user_id"), is_active=True).first()


def may_open_console(user) -> bool:
    """Whether `user` may open the operator console at all (Django's admin: active staff)."""
    return bool(user is not None and user.is_active and user.is_staff)


def viewed_principal(session, real: Principal) -> Principal:
    """The Principal the session's administrator views the console as, marked `viewed_by`; `real` when
    the session views as nobody, the viewer is no longer an administrator or the user is gone."""
    if not real.is_admin:
        return real
    user = viewed_user(session)
    if user is None:
        return real
    return replace(principal_for_user(user, auth_method=AuthMethod.SESSION), viewed_by=real.username)
