import json

from django.conf import settings
from django.contrib.auth.models import AbstractUser, Group
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from accounts.choices import AuditAction, TokenKind
from accounts.querysets import AuditEventQuerySet
from accounts.scope_rules import publish_names_errors, server_rules_errors, ui_permissions_errors
from core import sealing


class User(AbstractUser):
    """A person or service account; permissions come from its groups' scopes."""

    is_service_account = models.BooleanField(
        default=False, help_text="a machine identity: logs in only with client credentials"
    )

    class Meta:
        db_table = "accounts_user"


class Scope(models.Model):
    """A named bundle of server rules (MCP methods and tools) and UI permissions, granted to groups.

    The rule format is the reference implementation's scopes.yml: `server_rules` is a list of
    `{server, methods, tools}` and `ui_permissions` maps a permission name to a list of paths or "all".
    `publish_names` (the registry API's own) lists the server.json name patterns it may publish.
    """

    name = models.CharField(max_length=150, unique=True)
    description = models.TextField(blank=True)
    server_rules = models.JSONField(default=list, blank=True)
    ui_permissions = models.JSONField(default=dict, blank=True)
    publish_names = models.JSONField(
        default=list, blank=True, help_text="server.json names the scope may publish: com.acme/*, …"
    )
    groups = models.ManyToManyField(Group, related_name="scopes", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        if rule_errors := server_rules_errors(self.server_rules):
            errors["server_rules"] = rule_errors
        if permission_errors := ui_permissions_errors(self.ui_permissions):
            errors["ui_permissions"] = permission_errors
        if name_errors := publish_names_errors(self.publish_names):
            errors["publish_names"] = name_errors
        if errors:
            raise ValidationError(errors)


class IdpGroupMapping(models.Model):
    """An identity provider's group name (from its groups claim) granting a registry group."""

    idp_group = models.CharField(max_length=200, db_index=True)
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="idp_mappings")

    class Meta:
        ordering = ["idp_group"]
        constraints = [
            models.UniqueConstraint(fields=["idp_group", "group"], name="idp_group_mapping_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.idp_group} → {self.group.name}"


class ClientCredential(models.Model):
    """A service account's client id and secret for the client-credentials grant.

    Only a SHA-256 hash of the secret is stored; the secret is shown once, when it is created.
    """

    SECRET_FIELDS = ("secret_hash",)  # never filtered, searched, sorted or shown (core/admin.py)

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="credentials")
    client_id = models.CharField(max_length=80, unique=True)
    secret_hash = models.CharField(max_length=64)
    description = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["client_id"]

    def __str__(self) -> str:
        return self.client_id


class IssuedToken(models.Model):
    """A registry-issued access token, recorded by its `jti` so it can be listed and revoked."""

    jti = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="issued_tokens")
    kind = models.CharField(max_length=32, choices=TokenKind.choices)
    description = models.CharField(max_length=200, blank=True)
    scopes = models.JSONField(default=list, blank=True)
    is_admin = models.BooleanField(default=False, help_text="carries administration rights")
    reach = models.JSONField(
        null=True, blank=True, help_text="the server and tools it is narrowed to (accounts/reach.py)"
    )
    client_id = models.CharField(
        max_length=80, blank=True, db_index=True, help_text="the client credential a service token came from"
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        help_text="the token that issued this one; revoking it revokes this one too",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when it was last presented (accounts/last_used.py: up to a minute late)",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} {self.jti[:8]}"


class AuditEvent(models.Model):
    """One mutation: who did what to which object, and when. Written by services, never edited.

    Each row joins the audit chain once its transaction commits (accounts/services/audit_chain.py):
    `chain_seq` its place, `prev_hash` the hash of the row before it, `row_hash` the sha256 of its
    canonical JSON with that hash (accounts/audit_hashing.py), so an edited, deleted or reordered row
    breaks every link after it (`manage.py audit_verify`)."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, help_text="kept when the user is deleted")
    action = models.CharField(max_length=40, choices=AuditAction.choices, db_index=True)
    target = models.CharField(max_length=300, db_index=True, help_text="kind:identifier, e.g. server:/time")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    chain_seq = models.BigIntegerField(null=True, blank=True, unique=True, editable=False)
    prev_hash = models.CharField(max_length=64, blank=True, editable=False)
    row_hash = models.CharField(max_length=64, blank=True, editable=False)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["id"], condition=models.Q(chain_seq__isnull=True), name="audit_unchained")
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise PermissionError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("audit events are append-only")


class AuditCheckpoint(models.Model):
    """The registry's signed word on the audit chain at a point: the hash of row `chain_seq` (a JWS by the
    attestation key, core/attestations.py). Written on a schedule, and when retention removes old rows
    (then it holds the hash of the last row removed, which the first kept row links to), so a chain
    rebuilt after an edit, or cut short, does not verify against them."""

    class Kind(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        RETENTION = "retention", "Before the rows retention removed"

    chain_seq = models.BigIntegerField(db_index=True)
    row_hash = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    signature = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-chain_seq", "-id"]

    def __str__(self) -> str:
        return f"audit checkpoint #{self.chain_seq} ({self.kind})"


class ProviderSignIn(models.Model):
    """What a user's last OpenID Connect login through `provider` obtained, kept only with
    CROSS_APP_ACCESS_ENABLED: the ID token and the refresh token, sealed (core/sealing.py) to the user and
    the provider, so the gateway can exchange them at the identity provider for an assertion another
    authorization server takes (connections/cross_app.py). Never shown anywhere; replaced by each login."""

    SECRET_FIELDS = ("sealed",)

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="provider_sign_ins")
    provider = models.CharField(max_length=100, help_text="the login's provider id")
    issuer = models.CharField(max_length=500, help_text="the identity provider's issuer")
    sealed = models.TextField()
    id_token_expires_at = models.DateTimeField(null=True, blank=True)
    signed_in_at = models.DateTimeField()

    class Meta:
        ordering = ["-signed_in_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "provider"], name="provider_sign_in_one_per_provider"),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.provider}"

    @staticmethod
    def sealing_context(user_id: int, provider: str, issuer: str) -> str:
        """What the sealed tokens are bound to: a row copied to another user or provider does not open."""
        return f"provider-sign-in|user={user_id}|{provider}|{issuer}"

    def opened(self) -> dict:
        """The kept tokens, {"id_token", "refresh_token"} (core.sealing.Unsealable when they do not open)."""
        context = self.sealing_context(self.user_id, self.provider, self.issuer)
        return json.loads(sealing.unseal(self.sealed, context=context))

    def id_token_fresh(self, margin_seconds: int = 30) -> bool:
        """Whether the kept ID token is still good for `margin_seconds`."""
        expires = self.id_token_expires_at
        return expires is not None and (expires - timezone.now()).total_seconds() > margin_seconds
