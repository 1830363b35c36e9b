from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Collate
from pgvector.django import HnswIndex, VectorField

from core.embeddings import EMBEDDING_DIMENSIONS
from core.targets import TargetKind
from core.validators import PATH_MAX_LENGTH, validate_http_url, validate_registry_path
from servers.choices import (
    AuthType,
    HealthStatus,
    PinSubject,
    ToolChangeKind,
    ToolChangeSeenIn,
    ToolChangeStatus,
    Transport,
)
from servers.querysets import ServerQuerySet, ToolQuerySet
from servers.shared_headers import UpstreamAuthFields


class Server(UpstreamAuthFields):
    """An MCP server behind the gateway: where to proxy to, what it offers and whether it answers.

    `upstream_auth` says whose credential the gateway sends: none, the operator's shared `headers`
    (sealed at rest; no API response and no admin list ever shows them), or each user's own
    (servers/shared_headers.py, servers/upstream_auth.py).
    """

    TARGET_KIND = TargetKind.SERVER
    UPSTREAM_URL_FIELD = "proxy_pass_url"
    SECRET_FIELDS = ("sealed_headers",)  # never filtered, searched, sorted or shown (core/admin.py)

    path = models.CharField(max_length=PATH_MAX_LENGTH, unique=True, validators=[validate_registry_path])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    proxy_pass_url = models.URLField(max_length=2048, validators=[validate_http_url])
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    num_tools = models.PositiveIntegerField(default=0)
    num_stars = models.PositiveIntegerField(default=0)
    is_python = models.BooleanField(default=False)
    license = models.CharField(max_length=100, blank=True, default="N/A")
    is_enabled = models.BooleanField(default=False, db_index=True)
    health_status = models.CharField(
        max_length=32, choices=HealthStatus.choices, default=HealthStatus.UNKNOWN, db_index=True
    )
    health_detail = models.TextField(blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    # When the current unhealthy spell began (null while not unhealthy): spaces out re-checks
    # (servers/recheck.py).
    unhealthy_since = models.DateTimeField(null=True, blank=True)
    supported_transports = ArrayField(
        models.CharField(max_length=32, choices=Transport.choices),
        default=list,
        blank=True,
    )
    auth_type = models.CharField(max_length=32, choices=AuthType.choices, default=AuthType.NONE)
    auth_provider = models.CharField(max_length=100, blank=True)
    version = models.CharField(max_length=100, default="1.0.0")
    # Pinned tools (servers/services/pins.py): when the tools were first pinned (null: not yet, so the
    # next discovery pins what it finds), the digest of the pinned set, and whether changes are pinned
    # without an operator (audited all the same).
    tools_pinned_at = models.DateTimeField(null=True, blank=True)
    prompts_pinned_at = models.DateTimeField(null=True, blank=True)
    # Enabled again: its next discovery pins what it offers then, as registering does.
    repin_on_discovery = models.BooleanField(default=False)
    tool_set_digest = models.CharField(max_length=64, blank=True)
    # The scan of the pinned set (servers/scanning.py), as /v0.1's scan receipt gives it.
    tools_scanned_at = models.DateTimeField(null=True, blank=True)
    tool_scan_verdict = models.CharField(max_length=16, blank=True)
    tool_attestation = models.TextField(blank=True)  # the signed JWS of that scan (core/attestations.py)
    tool_scan_rules = models.CharField(max_length=80, blank=True)
    tool_scanner_version = models.CharField(max_length=32, blank=True)
    approve_tool_changes = models.BooleanField(
        default=False, help_text="trusted server: changes to its tools are approved automatically (audited)"
    )
    registered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)
    # Out of band, as for agents: writes set `embedding_dirty` and a task embeds dirty rows.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_dirty = models.BooleanField(default=True, db_index=True)

    objects = ServerQuerySet.as_manager()

    class Meta:
        ordering = ["path"]
        indexes = [
            # /v0.1 pages order paths as bytes, the order of registry names (catalog/listing.py).
            models.Index(Collate("path", "C"), name="server_path_bytes"),
            HnswIndex(
                name="server_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return self.path


class Tool(models.Model):
    """A tool a server offers, as its `tools/list` answer described it."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict, blank=True)
    # A changed tool list replaces the rows, so a new or changed tool starts dirty.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_dirty = models.BooleanField(default=True, db_index=True)

    objects = ToolQuerySet.as_manager()

    class Meta:
        ordering = ["server_id", "name"]
        constraints = [models.UniqueConstraint(fields=["server", "name"], name="tool_unique_per_server")]
        indexes = [
            HnswIndex(
                name="tool_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return f"{self.server.path}:{self.name}"


class ToolPin(models.Model):
    """A tool's or a prompt's definition as an operator approved it (servers/pins.py says what it holds):
    the gateway lets through only tools and prompts whose live definition has this digest."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="tool_pins")
    subject = models.CharField(max_length=8, choices=PinSubject.choices, default=PinSubject.TOOL)
    name = models.CharField(max_length=200)
    definition = models.JSONField()
    digest = models.CharField(max_length=64)
    findings = models.JSONField(default=list, blank=True)  # the scan of `definition` (servers/scanning.py)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField()

    class Meta:
        ordering = ["server_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "subject", "name"], name="pin_unique_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.path}:{self.name}"


class ToolChange(models.Model):
    """What a server offers that differs from its pins, found by tool discovery or seen in a live list
    through the gateway; a new or changed tool is held until an operator approves or blocks it."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="tool_changes")
    subject = models.CharField(max_length=8, choices=PinSubject.choices, default=PinSubject.TOOL)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=ToolChangeKind.choices)
    old_definition = models.JSONField(null=True, blank=True)
    new_definition = models.JSONField(null=True, blank=True)
    new_digest = models.CharField(max_length=64, blank=True)
    findings = models.JSONField(default=list, blank=True)  # the scan of `new_definition`
    seen_in = models.CharField(max_length=16, choices=ToolChangeSeenIn.choices)
    status = models.CharField(
        max_length=16, choices=ToolChangeStatus.choices, default=ToolChangeStatus.PENDING, db_index=True
    )
    found_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["server_id", "name", "-found_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["server", "subject", "name", "new_digest"],
                condition=models.Q(status=ToolChangeStatus.PENDING),
                name="change_pending_once",
            )
        ]

    def __str__(self) -> str:
        return f"{self.server.path}:{self.name} ({self.kind})"


class ToolBlock(models.Model):
    """A tool of a server an operator blocked: hidden from every list and refused on every call, for
    every caller, until unblocked (servers/services/tool_blocks.py). Named, not tied to a Tool row, so
    it holds whatever the server lists next."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="tool_blocks")
    name = models.CharField(max_length=200)
    reason = models.CharField(max_length=500, blank=True)
    blocked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    blocked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["server_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="tool_block_unique_per_server")
        ]

    def __str__(self) -> str:
        return f"{self.server.path}:{self.name}"


class HealthChange(models.Model):
    """One change of a health status (checks, enable and disable): what every target's history row holds
    besides the target (HealthTransition here, agents' AgentHealthTransition)."""

    from_status = models.CharField(max_length=32, choices=HealthStatus.choices)
    to_status = models.CharField(max_length=32, choices=HealthStatus.choices)
    detail = models.TextField(blank=True)
    at = models.DateTimeField(db_index=True)

    class Meta:
        abstract = True


class HealthTransition(HealthChange):
    """One change of a server's health status, so uptime over any period can be computed from the rows."""

    server = models.ForeignKey(Server, on_delete=models.CASCADE, related_name="health_transitions")

    class Meta:
        ordering = ["server_id", "at", "id"]
        indexes = [models.Index(fields=["server", "at"], name="health_transition_server_at")]

    def __str__(self) -> str:
        return f"{self.server_id}: {self.from_status} → {self.to_status}"
