"""API keys, retention policies and the stored metric rows (one table per kind, plus a generic one)."""

import hashlib

from django.db import models

from core.metric_choices import AuthMethod, FlowStep, MetricType, ToolMethod


def key_hash(raw: str) -> str:
    """What is stored of an API key: its SHA-256."""
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiKey(models.Model):
    """The key of one sending service. Only the SHA-256 of the key is stored; the key itself is shown
    once, when it is made (or lives in the `METRICS_API_KEY_<NAME>` variable it came from)."""

    SECRET_FIELDS = ("key_hash",)  # never filtered, searched, sorted or shown (core/admin.py)

    service = models.CharField(max_length=100, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The first characters of the key, to recognise it.")
    is_admin = models.BooleanField(default=False, help_text="May read and apply retention policies.")
    rate_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests per minute; empty means METRICS_RATE_LIMIT."
    )
    from_environment = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "metrics API key"
        ordering = ["service"]

    def __str__(self) -> str:
        return f"{self.service} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class MetricRow(models.Model):
    """What every stored metric has. `id` is given at ingestion, so a flush that runs twice after a
    crash inserts each metric once."""

    id = models.UUIDField(primary_key=True)
    service = models.CharField(max_length=100)
    version = models.CharField(max_length=50, blank=True)
    timestamp = models.DateTimeField()
    value = models.FloatField()
    duration_ms = models.FloatField(null=True, blank=True)
    dimensions = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        abstract = True
        ordering = ["-timestamp"]

    def __str__(self) -> str:
        return f"{self.service} {self.timestamp:%Y-%m-%d %H:%M:%S}"


def _indexes(prefix: str) -> list[models.Index]:
    return [
        models.Index(fields=["timestamp"], name=f"{prefix}_time"),
        models.Index(fields=["service", "timestamp"], name=f"{prefix}_service_time"),
    ]


class AuthMetric(MetricRow):
    success = models.BooleanField()
    method = models.CharField(max_length=10, choices=AuthMethod.choices)
    server = models.CharField(max_length=255, blank=True)
    user_hash = models.CharField(max_length=128, blank=True)

    class Meta(MetricRow.Meta):
        indexes = _indexes("metric_auth")


class ToolExecutionMetric(MetricRow):
    method = models.CharField(max_length=20, choices=ToolMethod.choices)
    tool_name = models.CharField(max_length=255, blank=True)
    client_name = models.CharField(max_length=255, blank=True)
    success = models.BooleanField()
    input_size_bytes = models.BigIntegerField(null=True, blank=True)
    output_size_bytes = models.BigIntegerField(null=True, blank=True)

    class Meta(MetricRow.Meta):
        indexes = _indexes("metric_tool")


class DiscoveryMetric(MetricRow):
    query = models.TextField(blank=True)
    results_count = models.IntegerField(null=True, blank=True)
    top_k = models.IntegerField(null=True, blank=True)
    top_n = models.IntegerField(null=True, blank=True)
    embedding_time_ms = models.FloatField(null=True, blank=True)
    search_time_ms = models.FloatField(null=True, blank=True)

    class Meta(MetricRow.Meta):
        indexes = _indexes("metric_discovery")


class ProtocolLatencyMetric(MetricRow):
    flow_step = models.CharField(max_length=20, choices=FlowStep.choices)

    class Meta(MetricRow.Meta):
        indexes = _indexes("metric_latency")


class GenericMetric(MetricRow):
    """registry_operation, health_check and custom metrics: their dimensions stay as sent."""

    type = models.CharField(max_length=30, choices=MetricType.choices)

    class Meta(MetricRow.Meta):
        indexes = [
            *_indexes("metric_generic"),
            models.Index(fields=["type", "timestamp"], name="metric_generic_type"),
        ]


# The stored tables by name: the only names retention and the admin endpoints accept.
METRIC_TABLES: dict[str, type[MetricRow]] = {
    "auth_metrics": AuthMetric,
    "tool_execution_metrics": ToolExecutionMetric,
    "discovery_metrics": DiscoveryMetric,
    "protocol_latency_metrics": ProtocolLatencyMetric,
    "generic_metrics": GenericMetric,
}

# Which table each type is stored in.
TABLE_OF_TYPE = {
    MetricType.AUTH_REQUEST: "auth_metrics",
    MetricType.TOOL_EXECUTION: "tool_execution_metrics",
    MetricType.TOOL_DISCOVERY: "discovery_metrics",
    MetricType.PROTOCOL_LATENCY: "protocol_latency_metrics",
    MetricType.REGISTRY_OPERATION: "generic_metrics",
    MetricType.HEALTH_CHECK: "generic_metrics",
    MetricType.CUSTOM: "generic_metrics",
}


class RetentionPolicy(models.Model):
    """How long one table keeps its rows; a table without a policy keeps METRICS_RETENTION_DAYS."""

    table = models.CharField(max_length=40, unique=True, choices=[(name, name) for name in METRIC_TABLES])
    days = models.PositiveIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "retention policies"
        ordering = ["table"]

    def __str__(self) -> str:
        return f"{self.table}: {self.days} days"
