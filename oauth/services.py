"""Writes of the authorization server: a user's consent (given, narrowed, withdrawn) and the removal of
self-registered applications that never completed an authorization."""

from __future__ import annotations

import operator
from datetime import datetime, timedelta
from functools import reduce

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts.choices import AuditAction
from accounts.last_used import stamp
from accounts.models import User
from accounts.services.audit import audit_event_record
from core.untrusted import printable
from oauth.models import Consent
from oauth.resources import audience_of_resource
from oauth.selectors import tool_set_of


def consent_record(
    *,
    user: User,
    application: Application,
    all_rights: bool,
    scopes: list[str],
    resource: str,
    remember: bool,
    administers: bool = False,
    server_path: str = "",
    tools: list[str] | None = None,
) -> Consent:
    """The user approved `application` for `resource` with these rights (`tools`: only these tools of
    the resource's server `server_path`; `administers`: administration, which only an administrator may
    choose, never together with tools). One consent per user and application: approving again replaces
    its rights (for the tokens already issued too) and adds the resource."""
    with transaction.atomic():
        consent, _ = Consent.objects.select_for_update().get_or_create(user=user, application=application)
        consent.all_rights = all_rights
        consent.administers = administers
        chosen = dict(consent.tools) if isinstance(consent.tools, dict) else {}
        if server_path:
            chosen.pop(server_path, None)
            if tools:
                chosen[server_path] = sorted(set(tools))
        consent.tools = chosen
        consent.scopes = sorted(set(scopes))
        if resource not in consent.resources:
            consent.resources = [*consent.resources, resource]
        consent.remembered = remember
        consent.save()
        audit_event_record(
            actor=user,
            action=AuditAction.OAUTH_CONSENT,
            target=f"application:{application.client_id}",
            detail={
                "name": application.name,
                "resource": resource,
                "all_rights": all_rights,
                "administers": administers,
                "tools": consent.tools.get(server_path) if server_path else None,
                "scopes": consent.scopes,
                "remembered": remember,
            },
        )
    return consent


def consent_withdraw(*, actor, consent: Consent) -> int:
    """End an application's access for the consent's user: the consent and every token and pending
    code of the application for that user. Returns how many access tokens were revoked."""
    user, application = consent.user, consent.application
    with transaction.atomic():
        revoked = AccessToken.objects.filter(user=user, application=application).count()
        RefreshToken.objects.filter(user=user, application=application).delete()
        AccessToken.objects.filter(user=user, application=application).delete()
        Grant.objects.filter(user=user, application=application).delete()
        consent.delete()
        audit_event_record(
            actor=actor,
            action=AuditAction.OAUTH_CONSENT_WITHDRAW,
            target=f"application:{application.client_id}",
            detail={"name": application.name, "user": user.get_username(), "tokens_revoked": revoked},
        )
    return revoked


def consents_used(marks: dict[tuple[int, str], datetime]) -> None:
    """When each (user id, client id) last used a token of its application (accounts/last_used.py): the
    applications' ids, then one UPDATE."""
    ids = dict(
        Application.objects.filter(client_id__in={client for _, client in marks}).values_list(
            "client_id", "pk"
        )
    )
    keyed = {
        Q(user_id=user_id, application_id=ids[client_id]): when
        for (user_id, client_id), when in marks.items()
        if client_id in ids
    }
    if keyed:
        stamp(Consent.objects.filter(reduce(operator.or_, keyed)), keyed)


def code_replay_revoke(*, access_token_checksum: str, client_id: str) -> int:
    """An authorization code was presented again: revoke what its first exchange issued, the access token
    and its refresh token's whole family (OAuth 2.1 section 4.1.3). Returns how many access tokens ended."""
    with transaction.atomic():
        token = AccessToken.objects.filter(token_checksum=access_token_checksum).first()
        if token is None:
            return 0
        families = set(
            RefreshToken.objects.filter(access_token=token)
            .exclude(token_family=None)
            .values_list("token_family", flat=True)
        )
        tokens = AccessToken.objects.filter(pk=token.pk)
        for family in families:
            tokens |= AccessToken.objects.filter(refresh_token__token_family=family)
        ended = tokens.count()
        RefreshToken.objects.filter(token_family__in=families).delete()
        RefreshToken.objects.filter(access_token=token).delete()
        tokens.delete()
        audit_event_record(
            actor=None,
            action=AuditAction.OAUTH_CODE_REPLAY,
            target=f"application:{client_id}",
            detail={"tokens_revoked": ended},
        )
    return ended


def applications_purge_unused(*, older_than: timedelta) -> int:
    """Remove applications that registered themselves (dynamic registration or a metadata document)
    longer than `older_than` ago and were never authorized by anyone. Safe to run twice."""
    unused = Application.objects.filter(
        registration_source__in=[Application.RegistrationSource.DCR, Application.RegistrationSource.CIMD],
        created__lt=timezone.now() - older_than,
    ).exclude(Exists(Consent.objects.filter(application=OuterRef("pk"))))
    # (a registration's own management token, RFC 7592, has no user: it is not a use)
    unused = unused.exclude(
        Exists(AccessToken.objects.filter(application=OuterRef("pk"), user__isnull=False))
    )
    with transaction.atomic():
        names = list(unused.values_list("client_id", flat=True)[:1000])
        deleted = Application.objects.filter(client_id__in=names).delete()[1].get(Application._meta.label, 0)
        if deleted:
            audit_event_record(
                actor=None,
                action=AuditAction.OAUTH_CLIENTS_PURGE,
                target="application:*",
                detail={"removed": deleted, "older_than_hours": older_than.total_seconds() / 3600},
            )
    return deleted


def application_save(*, actor, application: Application, created: bool, fields) -> Application:
    """Save an application an administrator registered or changed in the console (`fields`: the names
    the form changed; the client secret is recorded as changed, never by value)."""
    changed = sorted(set(fields) - {"client_secret"})
    detail = {"name": application.name, "fields": changed}
    if "client_secret" in fields:
        detail["client_secret_changed"] = True
    with transaction.atomic():
        application.save()
        action = AuditAction.OAUTH_CLIENT_CREATE if created else AuditAction.OAUTH_CLIENT_UPDATE
        audit_event_record(
            actor=actor, action=action, target=f"application:{application.client_id}", detail=detail
        )
    return application


def application_delete(*, actor, application: Application) -> None:
    """Remove an application with its tokens and codes (the database cascades them)."""
    target, name = f"application:{application.client_id}", application.name
    with transaction.atomic():
        application.delete()
        audit_event_record(
            actor=actor, action=AuditAction.OAUTH_CLIENT_DELETE, target=target, detail={"name": name}
        )


def trusted_issuer_save(*, actor, issuer, created: bool, fields) -> object:
    """Add or change a trusted identity provider (its settings checked by its model's rule), audited."""
    issuer.full_clean()
    with transaction.atomic():
        issuer.save()
        audit_event_record(
            actor=actor,
            action=AuditAction.OAUTH_ISSUER_SAVE,
            target=f"issuer:{issuer.issuer}",
            detail={"created": created, "fields": sorted(fields)},
        )
    return issuer


def trusted_issuer_delete(*, actor, issuer) -> None:
    target = f"issuer:{issuer.issuer}"
    with transaction.atomic():
        issuer.delete()
        audit_event_record(actor=actor, action=AuditAction.OAUTH_ISSUER_DELETE, target=target)


def assertion_granted(*, user: User, application: Application, issuer, resource: str, scopes) -> Consent:
    """A trusted identity provider's assertion (ID-JAG) got `application` a token for `user` at
    `resource`, with no one asked: the consent its tokens are judged by. The user's own consent, when
    they gave one, stands as they narrowed it; otherwise the identity provider's carries the user's
    rights as they change (never administration) and, for a server, the digest of its pinned tools now."""
    audience = audience_of_resource(resource)
    with transaction.atomic():
        consent, created = Consent.objects.select_for_update().get_or_create(
            user=user, application=application, defaults={"all_rights": True, "issuer": issuer.issuer}
        )
        if consent.issuer:
            consent.issuer, consent.all_rights, consent.administers = issuer.issuer, True, False
            digest = tool_set_of(audience) if audience else None
            if digest is not None:
                consent.tool_sets = {**consent.tool_sets, audience: digest}
        if resource not in consent.resources:
            consent.resources = [*consent.resources, resource]
        consent.save()
        audit_event_record(
            actor=user,
            action=AuditAction.OAUTH_ASSERTION,
            target=f"application:{application.client_id}",
            detail={
                "name": application.name,
                "issuer": issuer.issuer,
                "resource": resource,
                "scopes": sorted(scopes),
                "consent": "the identity provider's" if consent.issuer else "the user's own",
            },
        )
    return consent


def assertion_refused(*, client_id: str, reason: str) -> None:
    """An assertion was refused at the token endpoint: the reason, never the assertion."""
    audit_event_record(
        actor=None,
        action=AuditAction.OAUTH_ASSERTION_REFUSED,
        target=f"application:{printable(client_id[:300])}",
        detail={"reason": printable(reason[:500])},
    )
