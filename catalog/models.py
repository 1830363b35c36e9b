from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import HnswIndex, VectorField

from catalog.choices import Status
from core.embeddings import EMBEDDING_DIMENSIONS
from core.validators import validate_http_url

NAME_MAX_LENGTH = 200  # server.json: 3 to 200 characters
VERSION_MAX_LENGTH = 255
STATUS_MESSAGE_MAX_LENGTH = 500


class Upstream(models.Model):
    """Another registry serving the `/v0.1` API whose entries are mirrored here (catalog/mirroring.py).

    `auth_header` is sent to the upstream as `Authorization`; no page or API answer shows it."""

    SECRET_FIELDS = ("auth_header",)  # never filtered, searched, sorted or shown (core/admin.py)

    name = models.SlugField(max_length=100, unique=True)
    url = models.URLField(
        max_length=2048, validators=[validate_http_url], help_text="its base URL, before /v0.1"
    )
    auth_header = models.CharField(max_length=4096, blank=True)
    include = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    exclude = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    interval_minutes = models.PositiveIntegerField(default=60)
    is_enabled = models.BooleanField(default=True)
    # Where a crawl stands: the upstream's cursor of the next page while a crawl is under way (a crawl
    # killed halfway resumes there), and the newest `updatedAt` seen, which the next sync asks from.
    cursor = models.TextField(blank=True)
    crawl_since = models.CharField(max_length=64, blank=True)
    updated_watermark = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    next_sync_at = models.DateTimeField(null=True, blank=True, db_index=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    # How the last sync ended: complete, stopped at a bound (resumed by the next), or failed.
    last_outcome = models.CharField(max_length=300, blank=True)
    # The counts of the last sync, and why entries failed (a sample).
    seen = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ServerVersion(models.Model):
    """One version of a server.json document, published here or mirrored from an upstream.

    `document` is the whole server.json as it was sent (every field, `_meta` included); a published
    version never changes but for its status. `name`, `version` and `description` repeat the document's
    for indexes and search."""

    name = models.CharField(max_length=NAME_MAX_LENGTH, db_collation="C")
    version = models.CharField(max_length=VERSION_MAX_LENGTH, db_collation="C")
    document = models.JSONField()
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    status_message = models.CharField(max_length=STATUS_MESSAGE_MAX_LENGTH, blank=True)
    status_changed_at = models.DateTimeField()
    is_latest = models.BooleanField(default=False)
    published_at = models.DateTimeField()
    updated_at = models.DateTimeField(db_index=True)
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    upstream = models.ForeignKey(
        Upstream, null=True, blank=True, on_delete=models.CASCADE, related_name="versions"
    )
    synced_at = models.DateTimeField(null=True, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_dirty = models.BooleanField(default=True, db_index=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="catalog_version_unique"),
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(is_latest=True), name="catalog_one_latest_per_name"
            ),
        ]
        indexes = [
            HnswIndex(
                name="catalog_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def is_mirrored(self) -> bool:
        return self.upstream_id is not None


class GatewayBinding(models.Model):
    """A published or mirrored server put behind the gateway: its remote became the gateway server
    `server`, and /v0.1 advertises the gateway's URL as the remote of every version of `name`."""

    name = models.CharField(max_length=NAME_MAX_LENGTH, unique=True, db_collation="C")
    server = models.OneToOneField("servers.Server", on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
