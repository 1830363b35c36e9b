"""Stopping "view as this user" (accounts/view_as.py): the one change a viewing session may make."""

from urllib.parse import urlencode

from django.contrib.auth import get_user
from django.http import HttpResponseRedirect
from django.views.decorators.http import require_POST

from accounts.services.view_as import view_as_stop


@require_POST
def view_as_stop_view(request):
    """POST /view-as/stop: back to the administrator's own rights, on the user's access page."""
    username = view_as_stop(session=request.session, actor=get_user(request))
    if not username:
        return HttpResponseRedirect("/")
    return HttpResponseRedirect("/admin/access/?" + urlencode({"user": username}))
