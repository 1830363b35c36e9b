"""Operator console for servers and tools. Saves, deletes and bulk actions go through the services."""

import json

from django.contrib import admin
from django.utils.html import format_html

from accounts.choices import UiPermission
from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin
from servers import policies, services
from servers.models import HealthTransition, Server, Tool


class ToolInline(admin.TabularInline):
    model = Tool
    fields = ("name", "description", "schema")
    readonly_fields = ("name", "description", "schema")
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return True  # on a server page the caller may see; the rows are the tools it is shown

    def has_change_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        principal = self.admin_site.principal_of(request)
        return super().get_queryset(request).filter(pk__in=policies.tools_visible(principal).values("pk"))

    @admin.display(description="input schema")
    def schema(self, obj: Tool) -> str:
        return schema_block(obj.input_schema)


class SeenServersAdmin:
    """Rows of the servers the caller sees, as servers/policies.py rules on every surface: `server_lookup`
    leads from a row to its server."""

    server_lookup = "server"

    def shown(self, principal, queryset):
        seen = Server.objects.visible_to(principal).values("pk")
        return queryset.filter(**{f"{self.server_lookup}__in": seen})

    def may_view(self, principal, obj) -> bool:
        if obj is None:
            return policies.sees_servers(principal)
        return self.shown(principal, self.model.objects.filter(pk=obj.pk)).exists()


def schema_block(schema) -> str:
    """A tool's input schema, indented, in a <pre> the admin shows as is."""
    return format_html('<pre class="tool-schema">{}</pre>', json.dumps(schema, indent=2, sort_keys=True))


@admin.register(Server)
class ServerAdmin(SeenServersAdmin, ServiceModelAdmin):
    editable_fields = services.EDITABLE_FIELDS
    readonly_on_change = ("path",)
    list_display = (
        "path",
        "name",
        "is_enabled",
        "health_status",
        "tools_shown",
        "last_checked_at",
        "updated_at",
    )
    list_filter = ("is_enabled", "health_status", "auth_type", "is_python")
    search_fields = ("path", "name", "description", "proxy_pass_url")
    list_select_related = ("registered_by",)
    list_per_page = 50
    ordering = ("path",)
    readonly_fields = (
        "tools_shown",
        "health_status",
        "health_detail",
        "last_checked_at",
        "outbound_header_names",
        "registered_by",
        "created_at",
        "updated_at",
    )
    # `headers` may hold credentials: the console shows their names only. Embeddings are the search's
    # internals, never shown or edited.
    exclude = ("headers", "embedding", "embedding_dirty", "unhealthy_since", "num_tools")
    inlines = [ToolInline]
    actions = ["enable_selected", "disable_selected"]

    server_lookup = "pk"

    def may_add(self, principal) -> bool:
        return policies.server_may(principal, UiPermission.REGISTER_SERVICE)

    def may_change(self, principal, obj) -> bool:
        return policies.server_may(principal, UiPermission.MODIFY_SERVICE, obj)

    def may_delete(self, principal, obj) -> bool:
        return policies.server_may_delete(principal)

    def may_toggle(self, principal, obj) -> bool:
        return policies.server_may(principal, UiPermission.TOGGLE_SERVICE, obj)

    def get_queryset(self, request):
        principal = self.admin_site.principal_of(request)
        return super().get_queryset(request).annotate(shown_num_tools=policies.shown_tool_count(principal))

    @admin.display(description="tools", ordering="shown_num_tools")
    def tools_shown(self, obj: Server) -> int:
        """How many tools the caller is shown (servers/policies.py), as every surface counts them."""
        return getattr(obj, "shown_num_tools", obj.num_tools)

    @admin.display(description="outbound headers")
    def outbound_header_names(self, obj: Server) -> str:
        return ", ".join(sorted(obj.headers)) or "—"

    def service_create(self, request, obj, fields):
        return services.server_create(actor=request.user, path=obj.path, is_enabled=obj.is_enabled, **fields)

    def service_update(self, request, instance, fields):
        return services.server_update(actor=request.user, server=instance, **fields)

    def service_delete(self, request, instance):
        services.server_delete(actor=request.user, server=instance)

    def service_toggle(self, request, instance, enabled):
        return services.server_toggle(actor=request.user, server=instance, enabled=enabled)


@admin.register(Tool)
class ToolAdmin(SeenServersAdmin, ReadOnlyModelAdmin):
    """Tools come from tool discovery; the console only shows them."""

    list_display = ("name", "server", "short_description")
    list_filter = ("server__is_enabled", "server__health_status")
    search_fields = ("name", "description", "server__path", "server__name")
    list_select_related = ("server",)
    list_per_page = 100
    fields = ("schema", "name", "server", "description")  # the schema first: it is what callers send
    readonly_fields = fields

    def shown(self, principal, queryset):
        return queryset.filter(pk__in=policies.tools_visible(principal).values("pk"))

    @admin.display(description="input schema")
    def schema(self, obj: Tool) -> str:
        return schema_block(obj.input_schema)

    @admin.display(description="description")
    def short_description(self, obj: Tool) -> str:
        return obj.description[:120]


@admin.register(HealthTransition)
class HealthTransitionAdmin(SeenServersAdmin, ReadOnlyModelAdmin):
    """Health history is written by the checker and by enable/disable; the console only reads it."""

    list_display = ("at", "server", "from_status", "to_status", "detail")
    list_filter = ("to_status", "from_status", "at")
    search_fields = ("server__path", "detail")
    list_select_related = ("server",)
    date_hierarchy = "at"
    ordering = ("-at", "-id")  # newest first
    readonly_fields = ("server", "from_status", "to_status", "detail", "at")
    list_per_page = 100
