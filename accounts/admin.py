"""Operator console for users, scopes and the (read-only) audit trail."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts import services
from accounts.models import AuditEvent, Scope, User
from registry_site.admin import ServiceModelAdmin

admin.site.site_header = "MCP Gateway Registry"
admin.site.site_title = "MCP Gateway Registry"
admin.site.index_title = "Operator console"


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_select_related = ()


@admin.register(Scope)
class ScopeAdmin(ServiceModelAdmin):
    editable_fields = services.SCOPE_EDITABLE_FIELDS
    readonly_on_change = ("name",)
    list_display = ("name", "description", "group_names", "updated_at")
    search_fields = ("name", "description", "groups__name")
    list_filter = ("groups",)
    filter_horizontal = ("groups",)
    readonly_fields = ("created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    @admin.display(description="groups")
    def group_names(self, obj: Scope) -> str:
        return ", ".join(group.name for group in obj.groups.all())

    def service_create(self, request, obj, fields):
        return services.scope_create(actor=request.user, name=obj.name, **fields)

    def service_update(self, request, instance, fields):
        return services.scope_update(actor=request.user, scope=instance, **fields)

    def service_delete(self, request, instance):
        services.scope_delete(actor=request.user, scope=instance)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit trail is append-only: no add, change or delete from the console."""

    list_display = ("created_at", "actor_name", "action", "target")
    list_filter = ("action", "created_at")
    search_fields = ("actor_name", "target")
    list_select_related = ("actor",)
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "actor", "actor_name", "action", "target", "detail")
    list_per_page = 100

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
