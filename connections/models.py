from django.conf import settings
from django.db import models
from django.db.models import Q

from connections.choices import Purpose


class UpstreamCredential(models.Model):
    """A credential the gateway sends to one target (a server or an A2A agent: exactly one of the two keys,
    named by the target's kind) on someone's behalf: a user's own secret (purpose
    `user`), or the discovery connection an administrator made (purpose `discovery`, no user).

    `sealed` is AES-GCM under CREDENTIAL_KEYS (core/sealing.py), bound to the user, the server, the
    purpose and the server's mode and origin at connection time (connections/sealed.py): a row copied to
    another user or server, or a server moved to another origin, does not open. Never shown anywhere."""

    SECRET_FIELDS = ("sealed",)  # never filtered, searched, sorted or shown (core/admin.py)

    server = models.ForeignKey(
        "servers.Server", null=True, blank=True, on_delete=models.CASCADE, related_name="upstream_credentials"
    )
    agent = models.ForeignKey(
        "agents.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="upstream_credentials"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="upstream_credentials",
    )
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.USER)
    mode = models.CharField(max_length=32, help_text="the server's upstream authentication when connected")
    origin = models.CharField(
        max_length=300, help_text="where the credential may be sent (scheme://host:port)"
    )
    sealed = models.TextField()
    account_name = models.CharField(max_length=200, blank=True, help_text="as the upstream names the account")
    scopes = models.CharField(max_length=1000, blank=True, help_text="granted by the upstream (sign-in only)")
    wanted_scopes = models.CharField(
        max_length=1000, blank=True, help_text="asked for by the upstream since (step-up at the next sign-in)"
    )
    expires_at = models.DateTimeField(null=True, blank=True, help_text="when the access token expires")
    connected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server_id", "agent_id", "user_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(server__isnull=False, agent__isnull=True)
                | Q(server__isnull=True, agent__isnull=False),
                name="upstream_credential_one_target",
            ),
            models.UniqueConstraint(
                fields=["server", "user", "purpose"],
                condition=Q(user__isnull=False, server__isnull=False),
                name="upstream_credential_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["server", "purpose"],
                condition=Q(user__isnull=True, server__isnull=False),
                name="upstream_credential_one_shared",
            ),
            models.UniqueConstraint(
                fields=["agent", "user", "purpose"],
                condition=Q(user__isnull=False, agent__isnull=False),
                name="upstream_credential_agent_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["agent", "purpose"],
                condition=Q(user__isnull=True, agent__isnull=False),
                name="upstream_credential_agent_one_shared",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.target} · {self.user or self.purpose}"

    @property
    def target(self):
        """The server or the agent the credential is for."""
        return self.server if self.server_id is not None else self.agent


def of_target(target) -> dict:
    """The lookup of a target's credentials: `{"server": server}` or `{"agent": agent}` (by its kind)."""
    return {target.TARGET_KIND: target}


class UpstreamClient(models.Model):
    """The registry as a client of one upstream authorization server for one redirect URI: registered
    there dynamically (RFC 7591), or entered by an operator who registered the registry by hand (`entered`;
    it is used before anything else). Kept, so users of every server behind that issuer share it. A client
    secret is sealed like any credential."""

    SECRET_FIELDS = ("sealed_secret",)

    issuer = models.CharField(max_length=2048)
    redirect_uri = models.CharField(max_length=2048)
    client_id = models.CharField(max_length=2048)
    sealed_secret = models.TextField(blank=True)
    entered = models.BooleanField(default=False, help_text="entered by an operator, not registered")
    registered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["issuer"]
        constraints = [
            models.UniqueConstraint(fields=["issuer", "redirect_uri"], name="upstream_client_one_per_issuer")
        ]

    def __str__(self) -> str:
        return f"{self.client_id} at {self.issuer}"
