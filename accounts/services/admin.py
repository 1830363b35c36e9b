"""The bootstrap admin that `manage.py serve` makes sure exists."""

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from accounts.choices import AuditAction
from accounts.models import User
from accounts.services.audit import audit_event_record


@dataclass(frozen=True)
class AdminEnsureResult:
    user: User
    created: bool
    password_file: Path | None  # where a generated password was written, if one was


def admin_ensure(*, username: str, password: str, password_file: Path) -> AdminEnsureResult:
    """Make sure an admin superuser exists.

    With a password from the environment, the user gets exactly that password. Without one, a new
    user gets a generated password written once to `password_file` (0600); an existing user is left
    as it is. There is never a default password.
    """
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        created = user is None
        if created:
            user = User(username=username, is_staff=True, is_superuser=True)
        user.is_staff = True
        user.is_superuser = True
        user.is_active = True
        written = None
        if password:
            if created or not user.check_password(password):
                user.set_password(password)
        elif created:
            generated = secrets.token_urlsafe(18)
            user.set_password(generated)
            password_file.parent.mkdir(parents=True, exist_ok=True)
            password_file.write_text(f"{username}\n{generated}\n")
            password_file.chmod(0o600)
            written = password_file
        user.full_clean()
        user.save()
        if created:
            audit_event_record(
                actor=None, action=AuditAction.USER_CREATE, target=f"user:{username}", detail={"admin": True}
            )
    return AdminEnsureResult(user=user, created=created, password_file=written)
