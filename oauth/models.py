from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models


class Consent(models.Model):
    """A user's approval of an application (an MCP host): the rights its tokens carry, which are the
    user's own narrowed to the scopes chosen on the consent page (`all_rights`: every right the user has;
    administration only with `administers`), to the tools chosen per server (`tools`), and the resources
    approved. A remembered consent is not asked again for
    those resources; withdrawing it revokes every token of the application for that user.

    A consent a trusted identity provider's assertion made (`issuer`: the user was not asked) carries the
    user's rights as they change, never administration, and the digest of each server's pinned tools
    when granted (`tool_sets`): once they change, its tokens there are refused until the identity
    provider grants again."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_consents"
    )
    application = models.ForeignKey(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL, on_delete=models.CASCADE, related_name="consents"
    )
    all_rights = models.BooleanField(default=False, help_text="every right of the user, as they change")
    administers = models.BooleanField(
        default=False, help_text="its tokens administer (an administrator chose it explicitly)"
    )
    tools = models.JSONField(
        default=dict, blank=True, help_text="per server path, the only tools its tokens may call there"
    )
    scopes = models.JSONField(default=list, blank=True, help_text="the registry scopes tokens may use")
    resources = models.JSONField(default=list, blank=True, help_text="the resource URLs approved")
    remembered = models.BooleanField(default=False, help_text="not asked again for these resources")
    issuer = models.CharField(
        max_length=500,
        blank=True,
        help_text="the trusted identity provider whose assertion granted it, when the user was not asked",
    )
    tool_sets = models.JSONField(
        default=dict,
        blank=True,
        help_text="per server path, the digest of its pinned tools when the identity provider granted it",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_used_at = models.DateTimeField(
        null=True, blank=True, help_text="when a token of the application was last presented for the user"
    )

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "application"], name="oauth_consent_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.application}"


ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class TrustedIssuer(models.Model):
    """A company identity provider whose Identity Assertion JWT Authorization Grants (ID-JAG: the MCP
    enterprise-managed authorization extension) the registry's authorization server accepts
    (oauth/id_jag.py): its issuer, its keys (published at `jwks_url`, fetched under the outbound rules,
    or given as `jwks`), the algorithms it signs with, and the claim that names the registry's user."""

    issuer = models.CharField(max_length=500, unique=True, help_text="its `iss`, exactly")
    jwks_url = models.URLField(max_length=500, blank=True, help_text="where its signing keys are published")
    jwks = models.JSONField(default=dict, blank=True, help_text="its keys as a JWK Set, when not fetched")
    algorithms = models.JSONField(default=list, blank=True, help_text="allowed; empty: RS256 and ES256")
    user_claim = models.CharField(
        max_length=100, default="sub", help_text="the claim matched against the username (sub, email, …)"
    )
    is_enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["issuer"]

    def __str__(self) -> str:
        return self.issuer

    def clean(self):
        """The one rule for what an issuer's settings may say, for every surface that writes them."""
        problems = {}
        if not self.issuer.startswith(("https://", "http://")):
            problems["issuer"] = "An issuer is the identity provider's URL, as its assertions' iss says."
        unknown = [alg for alg in self.algorithms or [] if alg not in ALGORITHMS]
        if not isinstance(self.algorithms, list) or unknown:
            problems["algorithms"] = f"Algorithms are a list of {', '.join(ALGORITHMS)} (never none)."
        keys = self.jwks.get("keys") if isinstance(self.jwks, dict) else None
        if self.jwks and not (isinstance(keys, list) and all(isinstance(key, dict) for key in keys)):
            problems["jwks"] = 'Keys are a JWK Set: {"keys": [...]}.'
        if not self.jwks_url and not keys:
            problems["jwks_url"] = "Give the URL of its keys, or the keys themselves."
        if problems:
            raise ValidationError(problems)
