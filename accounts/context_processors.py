"""Template context every page gets."""

from django.conf import settings

from accounts.view_as import STOP_PATH
from accounts.view_as import viewing_as as viewing_as_in


def viewing_as(request) -> dict:
    """`viewing_as`: the user whose console an administrator is looking at (a banner offers to stop)."""
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return {}
    return {"viewing_as": viewing_as_in(request.session), "view_as_stop": STOP_PATH}
