"""The per-process cache of verified bearer tokens (core/epochs.py) and what invalidates it.

A token's Principal is kept until its epoch moves or the token expires. The epoch moves after any write
that could change what a token may do: users (active, superuser, groups), groups, scopes and their
groups, identity-provider group mappings, client credentials, tokens themselves (revocation) and the
consents and tokens of authorized applications (oauth/). Those
writes happen in services, the admin and the internal API alike, so the bump is attached to the models'
save/delete/m2m signals; the receivers do nothing else. Bulk `.update()`s of these models bypass the
signals, so the services that do them bump the epoch themselves (accounts/services/tokens.py).
"""

from __future__ import annotations

import hashlib

from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed, post_delete, post_save

from core.epochs import EpochCache

PRINCIPALS = EpochCache("auth")
# Saves that change nothing a token's Principal is built from.
BOOKKEEPING_FIELDS = frozenset({"last_login", "last_used_at"})


def token_key(raw: str) -> bytes:
    return hashlib.blake2b(raw.encode(), digest_size=20).digest()


def _saved(sender, instance, created=False, update_fields=None, **kwargs) -> None:
    if created and sender.__name__ in ("User", "IssuedToken", "ClientCredential", "AccessToken"):
        return  # nothing cached was built from a row that did not exist
    if update_fields and set(update_fields) <= BOOKKEEPING_FIELDS:
        return
    PRINCIPALS.bump()


def _changed(**kwargs) -> None:
    PRINCIPALS.bump()


def watch(model, *, saves: bool = True) -> None:
    """Move the epoch when a row of `model` is deleted (and, with `saves`, changed): for models of other
    apps a Principal is built from (oauth/apps.py)."""
    name = f"{model._meta.app_label}-{model.__name__}"
    if saves:
        post_save.connect(_saved, sender=model, dispatch_uid=f"principal-cache-save-{name}")
    post_delete.connect(_changed, sender=model, dispatch_uid=f"principal-cache-delete-{name}")


def connect() -> None:
    """Called once from AccountsConfig.ready()."""
    from accounts.models import ClientCredential, IdpGroupMapping, IssuedToken, Scope, User

    for model in (User, Group, Scope, IdpGroupMapping, ClientCredential, IssuedToken):
        post_save.connect(_saved, sender=model, dispatch_uid=f"principal-cache-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"principal-cache-delete-{model.__name__}")
    for through in (User.groups.through, Scope.groups.through, User.user_permissions.through):
        m2m_changed.connect(_changed, sender=through, dispatch_uid=f"principal-cache-m2m-{through.__name__}")
