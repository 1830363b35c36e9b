"""Starting and stopping "view as this user" (accounts/view_as.py), each audited."""

from django.core.exceptions import PermissionDenied

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services.audit import audit_event_record
from accounts.view_as import VIEW_AS_KEY, viewing_as


def view_as_start(*, session, actor, user: User) -> None:
    """Let the administrator `actor` view the console as `user` in this session, read only."""
    if not actor.is_admin or actor.viewed_by:
        raise PermissionDenied("Only an administrator may view the console as another user.")
    session[VIEW_AS_KEY] = {"user_id": user.pk, "username": user.username}
    audit_event_record(actor=actor, action=AuditAction.VIEW_AS_START, target=f"user:{user.username}")


def view_as_stop(*, session, actor) -> str:
    """End viewing as someone in this session; the username viewed as, or "" when there was none."""
    username = viewing_as(session)
    if username:
        session.pop(VIEW_AS_KEY, None)
        audit_event_record(actor=actor, action=AuditAction.VIEW_AS_STOP, target=f"user:{username}")
    return username
