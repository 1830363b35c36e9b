"""Operator console for servers and tools. Saves, deletes and bulk actions go through the services."""

import json

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html

from accounts.choices import UiPermission
from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin
from servers import policies, scanning, services
from servers.choices import ToolChangeStatus
from servers.models import HealthTransition, Server, Tool, ToolBlock, ToolChange
from servers.tool_review import diff_table, findings_table


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
    list_filter = ("is_enabled", "health_status", "auth_type", "is_python", "approve_tool_changes")
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
        "tools_pinned_at",
        "tool_set_digest",
        "tool_scan_verdict",
        "tools_scanned_at",
        "tool_scan_rules",
        "registered_by",
        "created_at",
        "updated_at",
    )
    # Shared headers may hold credentials: the console shows their names only. Embeddings are the
    # search's internals, never shown or edited.
    exclude = ("sealed_headers", "embedding", "embedding_dirty", "unhealthy_since", "num_tools")
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


@admin.register(ToolBlock)
class ToolBlockAdmin(SeenServersAdmin, ServiceModelAdmin):
    """Tools an operator blocked: adding one blocks it (hidden and refused for everyone, at once), deleting
    one unblocks it. Who may is who may change the server (servers/policies.py)."""

    editable_fields = ("server", "name", "reason")
    list_display = ("name", "server", "reason", "blocked_by", "blocked_at")
    search_fields = ("name", "server__path", "reason")
    list_select_related = ("server", "blocked_by")
    list_per_page = 100
    fields = ("server", "name", "reason", "blocked_by", "blocked_at")
    readonly_fields = ("blocked_by", "blocked_at")
    readonly_on_change = ("server", "name", "reason")

    def may_add(self, principal) -> bool:
        return policies.server_may(principal, UiPermission.MODIFY_SERVICE)

    def may_change(self, principal, obj) -> bool:
        return False  # a block is lifted and made again, never edited

    def may_delete(self, principal, obj) -> bool:
        return policies.server_may(principal, UiPermission.MODIFY_SERVICE, obj.server if obj else None)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "server":
            principal = self.principal(request)
            rows = Server.objects.only("pk", "path")
            allowed = [s.pk for s in rows if policies.server_may(principal, UiPermission.MODIFY_SERVICE, s)]
            kwargs["queryset"] = Server.objects.filter(pk__in=allowed)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def service_create(self, request, obj, fields):
        if not policies.server_may(self.principal(request), UiPermission.MODIFY_SERVICE, obj.server):
            raise PermissionDenied
        known = obj.server.tools.filter(name=obj.name).exists()  # (asked first: a block hides the tool)
        block = services.tool_block(actor=request.user, server=obj.server, name=obj.name, reason=obj.reason)
        if not known:
            self.message_user(
                request,
                f"{obj.server.path} offers no tool named “{obj.name}” now: check the name. The block holds "
                "whenever a tool of that name appears.",
                messages.WARNING,
            )
        return block

    def service_delete(self, request, instance):
        services.tool_unblock(actor=request.user, block=instance)


@admin.register(ToolChange)
class ToolChangeAdmin(SeenServersAdmin, ReadOnlyModelAdmin):
    """Changes of servers' tools since they were approved (servers/services/pins.py): each pending one is
    held until approved (pinned) or blocked, by those who may change its server."""

    list_display = (
        "name",
        "subject",
        "server",
        "kind",
        "status",
        "scan",
        "seen_in",
        "found_at",
        "decided_by",
    )
    list_filter = ("status", "subject", "kind", "seen_in")
    search_fields = ("name", "server__path")
    list_select_related = ("server", "decided_by")
    list_per_page = 100
    ordering = ("-found_at", "-id")
    fields = (
        "server",
        "subject",
        "name",
        "kind",
        "status",
        "seen_in",
        "diff",
        "scan_findings",
        "new_digest",
        "found_at",
        "decided_by",
    )
    readonly_fields = fields
    actions = ["approve_selected", "approve_overriding_selected", "block_selected"]
    change_form_template = "admin/servers/toolchange/change_form.html"
    DECISIONS = ("approve", "approve_overriding", "block")

    def has_approve_permission(self, request, obj=None) -> bool:
        return policies.server_may(self.principal(request), UiPermission.MODIFY_SERVICE)

    def get_urls(self):
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="servers_toolchange_decide",
        )
        return [decide, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        change = self.get_object(request, unquote(object_id))
        found = self.model.objects.filter(pk=change.pk) if change is not None else self.model.objects.none()
        decidable = bool(self._decidable(request, found))
        extra = {
            "decidable": decidable,
            "held_by_scan": change is not None and scanning.holds(change.findings),
            "decide_url": reverse("admin:servers_toolchange_decide", args=[object_id]) if decidable else "",
        }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def decide_view(self, request, object_id):
        """Approve, approve over the scan's findings, or block the change from its own page; back to it."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        change = self.get_object(request, unquote(object_id))
        if change is None:
            raise Http404
        decision = request.POST.get("decision")
        if decision not in self.DECISIONS:
            self.message_user(request, "Choose Approve, Approve despite the findings or Block.", "error")
        else:
            self._decide(request, ToolChange.objects.filter(pk=change.pk), decision)
        return redirect(reverse("admin:servers_toolchange_change", args=[change.pk]))

    @admin.display(description="what changed")
    def diff(self, obj: ToolChange) -> str:
        return diff_table(obj)

    @admin.display(description="scan")
    def scan(self, obj: ToolChange) -> str:
        return scanning.worst(obj.findings) or ("clean" if obj.new_definition else "")

    @admin.display(description="scan findings")
    def scan_findings(self, obj: ToolChange) -> str:
        return findings_table(obj.findings)

    def _decidable(self, request, queryset):
        principal = self.principal(request)
        return [
            change
            for change in queryset.filter(status=ToolChangeStatus.PENDING).select_related("server")
            if policies.server_may(principal, UiPermission.MODIFY_SERVICE, change.server)
        ]

    def _decide(self, request, queryset, decision: str) -> None:
        """The one way the console decides changes (the list's actions and the change's page)."""
        decidable = self._decidable(request, queryset)
        if not decidable:
            return self.message_user(
                request, "Nothing was decided: already decided, or not yours to decide.", messages.WARNING
            )
        if decision == "block":
            for change in decidable:
                services.tool_change_block(actor=request.user, change=change)
            return self.message_user(request, f"{len(decidable)} change(s) blocked.")
        override = decision == "approve_overriding"
        decided = [change for change in decidable if override or not scanning.holds(change.findings)]
        for change in decided:
            services.tool_change_approve(actor=request.user, change=change, override=override)
        said = "approved over their scan findings" if override else "approved"
        self.message_user(request, f"{len(decided)} change(s) {said}.")
        if held := len(decidable) - len(decided):
            self.message_user(
                request,
                f"{held} change(s) with high-severity scan findings left pending: read the findings, then "
                "use “Approve despite the scan findings”.",
                messages.WARNING,
            )

    @admin.action(description="Approve selected changes (pin them)", permissions=["approve"])
    def approve_selected(self, request, queryset):
        self._decide(request, queryset, "approve")

    @admin.action(description="Approve selected changes despite their scan findings", permissions=["approve"])
    def approve_overriding_selected(self, request, queryset):
        self._decide(request, queryset, "approve_overriding")

    @admin.action(
        description="Block the tools (and prompts) of the selected changes", permissions=["approve"]
    )
    def block_selected(self, request, queryset):
        self._decide(request, queryset, "block")


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
