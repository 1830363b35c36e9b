"""Operator console for servers and tools. Saves, deletes and bulk actions go through the services."""

from django.contrib import admin, messages
from django.db import models

from servers import services
from servers.models import Server, Tool


class ToolInline(admin.TabularInline):
    model = Tool
    fields = ("name", "description")
    readonly_fields = ("name", "description")
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Server)
class ServerAdmin(admin.ModelAdmin):
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = (
        "path",
        "name",
        "is_enabled",
        "health_status",
        "num_tools",
        "last_checked_at",
        "updated_at",
    )
    list_filter = ("is_enabled", "health_status", "auth_type", "is_python")
    search_fields = ("path", "name", "description", "proxy_pass_url")
    list_select_related = ("registered_by",)
    list_per_page = 50
    ordering = ("path",)
    readonly_fields = (
        "num_tools",
        "health_status",
        "health_detail",
        "last_checked_at",
        "outbound_header_names",
        "registered_by",
        "created_at",
        "updated_at",
    )
    # `headers` may hold credentials: the console shows their names only.
    exclude = ("headers",)
    inlines = [ToolInline]
    actions = ["enable_selected", "disable_selected"]

    def get_readonly_fields(self, request, obj=None):
        return ("path", *self.readonly_fields) if obj is not None else self.readonly_fields

    @admin.display(description="outbound headers")
    def outbound_header_names(self, obj: Server) -> str:
        return ", ".join(sorted(obj.headers)) or "—"

    def save_model(self, request, obj, form, change):
        fields = {
            name: form.cleaned_data[name] for name in form.changed_data if name in services.EDITABLE_FIELDS
        }
        if change:
            server = Server.objects.get(pk=obj.pk)
            services.server_update(actor=request.user, server=server, **fields)
            if "is_enabled" in form.changed_data:
                services.server_toggle(actor=request.user, server=server, enabled=obj.is_enabled)
        else:
            server = services.server_create(
                actor=request.user, path=obj.path, is_enabled=obj.is_enabled, **fields
            )
        obj.pk = server.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.server_delete(actor=request.user, server=obj)

    def delete_queryset(self, request, queryset):
        for server in queryset:
            services.server_delete(actor=request.user, server=server)

    @admin.action(description="Enable selected servers", permissions=["change"])
    def enable_selected(self, request, queryset):
        self._toggle(request, queryset, enabled=True)

    @admin.action(description="Disable selected servers", permissions=["change"])
    def disable_selected(self, request, queryset):
        self._toggle(request, queryset, enabled=False)

    def _toggle(self, request, queryset, *, enabled: bool) -> None:
        changed = 0
        for server in queryset:
            if server.is_enabled != enabled:
                services.server_toggle(actor=request.user, server=server, enabled=enabled)
                changed += 1
        state = "enabled" if enabled else "disabled"
        self.message_user(request, f"{changed} server(s) {state}.", messages.SUCCESS)


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    """Tools come from tool discovery; the console only shows them."""

    list_display = ("name", "server", "short_description")
    list_filter = ("server__is_enabled", "server__health_status")
    search_fields = ("name", "description", "server__path", "server__name")
    list_select_related = ("server",)
    list_per_page = 100
    readonly_fields = ("server", "name", "description", "input_schema")

    @admin.display(description="description")
    def short_description(self, obj: Tool) -> str:
        return obj.description[:120]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
