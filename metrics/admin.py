"""Operator console of the metrics service: keys (listed, limits edited, revoked; made with
`manage.py create_metrics_key`), retention policies, and the stored rows, read-only."""

from django.contrib import admin, messages

from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin
from metrics import services
from metrics.models import (
    ApiKey,
    AuthMetric,
    DiscoveryMetric,
    GenericMetric,
    ProtocolLatencyMetric,
    RetentionPolicy,
    ToolExecutionMetric,
)


@admin.register(ApiKey)
class ApiKeyAdmin(ServiceModelAdmin):
    editable_fields = ("rate_limit", "is_admin")
    list_display = (
        "service",
        "prefix",
        "is_admin",
        "rate_limit",
        "from_environment",
        "created_at",
        "revoked_at",
    )
    list_filter = ("is_admin", "from_environment", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("service", "prefix")
    fields = ("service", "prefix", "is_admin", "rate_limit", "from_environment", "created_at", "revoked_at")
    readonly_fields = ("service", "prefix", "from_environment", "created_at", "revoked_at")
    actions = ["revoke_selected"]

    def has_add_permission(self, request):
        return False  # a key is shown once: `manage.py create_metrics_key NAME`

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead, so the history stays

    def service_update(self, request, instance, fields):
        return services.api_key_update(
            actor=request.user,
            key=instance,
            rate_limit=fields.get("rate_limit", instance.rate_limit),
            is_admin=fields.get("is_admin", instance.is_admin),
        )

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_selected(self, request, queryset):
        for key in queryset:
            services.api_key_revoke(actor=request.user, key=key)
        messages.success(request, f"Revoked {queryset.count()} key(s).")


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(ServiceModelAdmin):
    editable_fields = ("table", "days")
    readonly_on_change = ("table",)
    list_display = ("table", "days", "updated_at")

    def service_create(self, request, obj, fields):
        return services.retention_policy_set(actor=request.user, table=fields["table"], days=fields["days"])

    def service_update(self, request, instance, fields):
        return services.retention_policy_set(
            actor=request.user, table=instance.table, days=fields.get("days", instance.days)
        )

    def service_delete(self, request, instance):
        services.retention_policy_delete(actor=request.user, policy=instance)


class MetricRowAdmin(ReadOnlyModelAdmin):
    """Stored metrics are evidence: nobody adds, edits or deletes them here (retention does). Newest
    first, durations rounded."""

    date_hierarchy = "timestamp"
    ordering = ("-timestamp",)
    list_per_page = 100
    show_full_result_count = False  # no COUNT(*) over millions of rows on every page

    @admin.display(description="duration", ordering="duration_ms")
    def duration(self, obj) -> str:
        return "—" if obj.duration_ms is None else f"{obj.duration_ms:,.1f} ms"


@admin.register(AuthMetric)
class AuthMetricAdmin(MetricRowAdmin):
    list_display = ("timestamp", "service", "method", "success", "server", "duration")
    list_filter = ("service", "method", "success")
    search_fields = ("server", "user_hash")


@admin.register(ToolExecutionMetric)
class ToolExecutionMetricAdmin(MetricRowAdmin):
    @admin.display(description="server")
    def server(self, obj: ToolExecutionMetric) -> str:
        return str((obj.dimensions or {}).get("server", "")) or "—"

    list_display = (
        "timestamp",
        "service",
        "server",
        "method",
        "tool_name",
        "client_name",
        "success",
        "duration",
    )
    list_filter = ("service", "method", "success")
    search_fields = ("tool_name", "client_name")


@admin.register(DiscoveryMetric)
class DiscoveryMetricAdmin(MetricRowAdmin):
    list_display = ("timestamp", "service", "query", "results_count", "duration")
    list_filter = ("service",)
    search_fields = ("query",)


@admin.register(ProtocolLatencyMetric)
class ProtocolLatencyMetricAdmin(MetricRowAdmin):
    list_display = ("timestamp", "service", "flow_step", "duration")
    list_filter = ("service", "flow_step")


@admin.register(GenericMetric)
class GenericMetricAdmin(MetricRowAdmin):
    list_display = ("timestamp", "service", "type", "server", "result", "value", "duration")
    list_filter = ("service", "type")
    search_fields = ("dimensions__server",)

    @admin.display(description="server")
    def server(self, obj: GenericMetric) -> str:
        """The server a health check (or another server metric) is about."""
        return str((obj.dimensions or {}).get("server", "")) or "—"

    @admin.display(description="result")
    def result(self, obj: GenericMetric) -> str:
        """A health check's outcome (healthy, unhealthy, ...) and the tools it found."""
        dimensions = obj.dimensions or {}
        status = str(dimensions.get("status", ""))
        if status and "num_tools" in dimensions:
            return f"{status}, {dimensions['num_tools']} tools"
        return status or "—"
