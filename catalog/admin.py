"""The catalog in the operator console: upstream registries (added, changed and removed through the
services, synced now on request, with the last sync's counts, failures and error), and the published
and mirrored versions, read-only, with two actions: detaching a mirrored server so that it can be
published here, and putting a server with a remote behind the gateway."""

import json

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join

from catalog.choices import Status
from catalog.models import ServerVersion, Upstream
from catalog.services import CatalogRefused, versions_detach
from catalog.services.gateway import version_put_behind_gateway
from catalog.services.lifecycle import StatusChange, version_status_set
from catalog.services.upstreams import UPSTREAM_EDITABLE_FIELDS, upstream_delete, upstream_save
from catalog.tasks import sync_upstream_task
from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin


class UpstreamForm(forms.ModelForm):
    url = forms.URLField(max_length=2048, assume_scheme="https", help_text="its base URL, before /v0.1")
    auth_header = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Sent to the upstream as Authorization (Bearer …). Write-only: leave empty to keep it.",
    )
    include = forms.CharField(
        required=False, help_text="name patterns to mirror, comma-separated (empty: all)"
    )
    exclude = forms.CharField(required=False, help_text="name patterns to leave out, comma-separated")

    class Meta:
        model = Upstream
        fields = ("name", "url", "auth_header", "include", "exclude", "interval_minutes", "is_enabled")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("include", "exclude"):
            self.initial[name] = ", ".join(getattr(self.instance, name) or [])

    @staticmethod
    def _patterns(text: str) -> list[str]:
        return [item.strip() for item in text.split(",") if item.strip()]

    def clean_include(self):
        return self._patterns(self.cleaned_data["include"])

    def clean_exclude(self):
        return self._patterns(self.cleaned_data["exclude"])

    def clean_auth_header(self):
        value = self.cleaned_data["auth_header"]
        return value if value else self.instance.auth_header


@admin.register(Upstream)
class UpstreamAdmin(ServiceModelAdmin):
    form = UpstreamForm
    editable_fields = UPSTREAM_EDITABLE_FIELDS
    readonly_on_change = ("name",)
    list_display = ("name", "url", "is_enabled", "last_synced_at", "counts", "consecutive_failures", "error")
    list_filter = ("is_enabled",)
    search_fields = ("name", "url")
    actions = ["sync_now"]
    readonly_fields = (
        "last_started_at",
        "last_synced_at",
        "last_outcome",
        "next_sync_at",
        "consecutive_failures",
        "last_error",
        "counts",
        "failure_list",
        "cursor",
        "updated_watermark",
    )

    @admin.display(description="last sync: seen / added / updated / failed")
    def counts(self, obj: Upstream) -> str:
        return f"{obj.seen} / {obj.added} / {obj.updated} / {obj.failed}"

    @admin.display(description="last error")
    def error(self, obj: Upstream) -> str:
        return (obj.last_error[:120] + "…") if len(obj.last_error) > 120 else obj.last_error or "—"

    @admin.display(description="entries that failed (up to 50)")
    def failure_list(self, obj: Upstream):
        if not obj.failures:
            return "—"
        rows = ((f.get("name"), f.get("version"), f.get("reason")) for f in obj.failures)
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} {}: {}</li>", rows))

    @admin.action(description="Sync the selected upstreams now", permissions=["change"])
    def sync_now(self, request, queryset):
        for upstream in queryset:
            sync_upstream_task.delay(upstream.pk)
        self.message_user(
            request, f"{queryset.count()} syncs queued; refresh to see their counts.", messages.SUCCESS
        )

    def service_create(self, request, obj, fields):
        return upstream_save(actor=request.user, name=obj.name, **fields)[0]

    def service_update(self, request, instance, fields):
        return upstream_save(actor=request.user, name=instance.name, **fields)[0]

    def service_toggle(self, request, instance, enabled: bool):
        upstream_save(actor=request.user, name=instance.name, is_enabled=enabled)

    def service_delete(self, request, instance):
        upstream_delete(actor=request.user, upstream=instance)


@admin.register(ServerVersion)
class ServerVersionAdmin(ReadOnlyModelAdmin):
    list_display = ("name", "version", "status", "is_latest", "origin", "published_at", "updated_at")
    list_filter = ("status", "is_latest", "upstream")
    search_fields = ("name", "description")
    list_select_related = ("upstream",)
    exclude = ("embedding", "embedding_dirty", "document")
    readonly_fields = ("document_formatted",)
    actions = ["deprecate", "undeprecate", "mark_deleted", "detach", "put_behind_gateway"]

    def may_view(self, principal, obj) -> bool:
        return principal.is_authenticated  # /v0.1 lists every version to every caller who signs in

    def shown(self, principal, queryset):
        return queryset if self.may_view(principal, None) else queryset.none()

    def has_change_permission(self, request, obj=None):
        return obj is None and self.principal(request).is_admin  # the detach action; no version is edited

    @admin.display(description="origin")
    def origin(self, obj: ServerVersion) -> str:
        return f"mirrored from {obj.upstream.name}" if obj.upstream_id else "published here"

    @admin.display(description="server.json")
    def document_formatted(self, obj: ServerVersion):
        return format_html(
            '<pre class="tool-schema">{}</pre>', json.dumps(obj.document, indent=2, ensure_ascii=False)
        )

    def _status_set(self, request, queryset, status: str, done: str) -> None:
        """The lifecycle of `/v0.1`'s PATCH …/status, for each selected version the caller may change."""
        principal, changed = self.principal(request), 0
        for row in queryset.order_by("name", "version"):
            try:
                version_status_set(
                    actor=principal, name=row.name, version=row.version, change=StatusChange(status)
                )
            except CatalogRefused as refusal:
                self.message_user(request, f"{row.name} {row.version}: {refusal.message}", messages.ERROR)
                continue
            changed += 1
        if changed:
            self.message_user(request, f"{changed} versions {done}.", messages.SUCCESS)

    @admin.action(description="Deprecate (still listed, marked deprecated)")
    def deprecate(self, request, queryset):
        self._status_set(request, queryset, Status.DEPRECATED, "deprecated")

    @admin.action(description="Make active again")
    def undeprecate(self, request, queryset):
        self._status_set(request, queryset, Status.ACTIVE, "made active")

    @admin.action(description="Mark deleted (hidden from listings, kept for history)")
    def mark_deleted(self, request, queryset):
        self._status_set(request, queryset, Status.DELETED, "marked deleted")

    @admin.action(description="Detach from their upstream (they become this registry's own)")
    def detach(self, request, queryset):
        names = sorted(set(queryset.filter(upstream__isnull=False).values_list("name", flat=True)))
        count = sum(versions_detach(actor=request.user, name=name) for name in names)
        self.message_user(request, f"{count} versions of {len(names)} servers detached.", messages.SUCCESS)

    @admin.action(description="Put behind the gateway (their remote becomes a gateway server)")
    def put_behind_gateway(self, request, queryset):
        principal = self.principal(request)
        for name in sorted(set(queryset.values_list("name", flat=True))):
            try:
                server = version_put_behind_gateway(actor=principal, name=name)
            except CatalogRefused as refusal:
                self.message_user(request, f"{name}: {refusal.message}", messages.ERROR)
                continue
            self.message_user(
                request,
                f"{name} is behind the gateway at {server.path}; set its credentials (outbound headers) on "
                "its server page if the remote needs them.",
                messages.SUCCESS,
            )
