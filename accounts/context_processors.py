"""Template context every page gets."""

from django.conf import settings
from django.contrib.auth.context_processors import PermWrapper

from accounts.authentication import principal_from_session
from accounts.view_as import STOP_PATH, viewed_user
from accounts.view_as import viewing_as as viewing_as_in


def viewing_as(request) -> dict:
    """`viewing_as`: the user whose console an administrator is looking at (a banner offers to stop).
    While viewing, `user` and `perms` are that user's, so every page greets them and lists their own
    recent actions, never the viewer's."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return {}
    username = viewing_as_in(request.session)
    context = {"viewing_as": username, "view_as_stop": STOP_PATH}
    if username:
        principal = principal_from_session(request, user=request.user)
        viewed = viewed_user(request.session) if principal is not None and principal.viewed_by else None
        if viewed is not None:
            context |= {"user": viewed, "perms": PermWrapper(viewed)}
    return context
