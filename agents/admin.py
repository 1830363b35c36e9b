"""Operator console for agents. Saves, deletes and bulk actions go through the services."""

from django.contrib import admin

from agents import services
from agents.models import CARD_PROTOCOL_FIELDS, Agent
from core.admin import ServiceModelAdmin


@admin.register(Agent)
class AgentAdmin(ServiceModelAdmin):
    editable_fields = services.EDITABLE_FIELDS
    readonly_on_change = ("path", "owner")
    list_display = ("path", "name", "visibility", "is_enabled", "skill_count", "owner", "updated_at")
    list_filter = ("is_enabled", "visibility", "provider", "preferred_transport")
    search_fields = ("path", "name", "description", "url", "provider_organization", "owner__username")
    list_select_related = ("owner",)
    list_per_page = 50
    ordering = ("path",)
    autocomplete_fields = ("owner",)
    filter_horizontal = ("groups",)
    readonly_fields = ("skill_count", "registered_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("path", "name", "description", "url", "version", "tags", "license")}),
        ("Access", {"fields": ("visibility", "is_enabled", "owner", "groups")}),
        ("Provider", {"fields": ("provider", "provider_organization", "provider_url")}),
        ("Skills", {"fields": ("skills", "skill_count")}),
        (
            "A2A card",
            {
                "classes": ("collapse",),
                "fields": CARD_PROTOCOL_FIELDS,
            },
        ),
        ("Bookkeeping", {"fields": ("registered_at", "updated_at")}),
    )
    actions = ["enable_selected", "disable_selected"]

    @admin.display(description="skills")
    def skill_count(self, obj: Agent) -> int:
        return obj.num_skills

    def service_create(self, request, obj, fields):
        agent = services.agent_create(actor=request.user, owner=obj.owner, path=obj.path, **fields)
        if obj.is_enabled:
            services.agent_toggle(actor=request.user, agent=agent, enabled=True)
        return agent

    def service_update(self, request, instance, fields):
        return services.agent_update(actor=request.user, agent=instance, **fields)

    def service_delete(self, request, instance):
        services.agent_delete(actor=request.user, agent=instance)

    def service_toggle(self, request, instance, enabled):
        return services.agent_toggle(actor=request.user, agent=instance, enabled=enabled)
