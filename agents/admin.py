"""Operator console for agents: who sees and changes which is agents/policies.py's rule. Saves, deletes and
bulk actions go through the services."""

from django.contrib import admin

from agents import policies, services
from agents.cards import SIGNED_CARD_NOTE
from agents.models import CARD_PROTOCOL_FIELDS, Agent
from core.admin import ServiceModelAdmin


@admin.register(Agent)
class AgentAdmin(ServiceModelAdmin):
    editable_fields = services.EDITABLE_FIELDS
    readonly_on_change = ("path", "owner")
    list_display = (
        "path",
        "name",
        "visibility",
        "is_enabled",
        "health_status",
        "skill_count",
        "owner",
        "updated_at",
    )
    list_filter = ("is_enabled", "health_status", "visibility", "provider", "preferred_transport")
    search_fields = ("path", "name", "description", "url", "provider_organization", "owner__username")
    list_select_related = ("owner",)
    list_per_page = 50
    ordering = ("path",)
    autocomplete_fields = ("owner",)
    filter_horizontal = ("groups",)
    # Shared headers may hold the agent's credential: the console shows their names only.
    readonly_fields = (
        "skill_count",
        "outbound_headers",
        "card_signed",
        "health_status",
        "health_detail",
        "last_checked_at",
        "registered_at",
        "updated_at",
    )
    fieldsets = (
        (None, {"fields": ("path", "name", "description", "url", "version", "tags", "license")}),
        ("Access", {"fields": ("visibility", "is_enabled", "owner", "groups")}),
        ("Credential", {"fields": ("upstream_auth", "user_secret_header", "outbound_headers")}),
        ("Health", {"fields": ("health_status", "health_detail", "last_checked_at")}),
        ("Provider", {"fields": ("provider", "provider_organization", "provider_url")}),
        ("Skills", {"fields": ("skills", "skill_count")}),
        (
            "A2A card",
            {
                "classes": ("collapse",),
                "fields": ("card_signed", *CARD_PROTOCOL_FIELDS),
            },
        ),
        ("Bookkeeping", {"fields": ("registered_at", "updated_at")}),
    )
    actions = ["enable_selected", "disable_selected"]

    # Who sees and may change which agent: agents/policies.py's rules, as on every other surface.
    def shown(self, principal, queryset):
        return queryset.filter(pk__in=Agent.objects.visible_to(principal).values("pk"))

    def may_view(self, principal, obj) -> bool:
        if obj is None:
            return principal.is_authenticated  # public agents are seen by everyone
        return Agent.objects.visible_to(principal).filter(pk=obj.pk).exists()

    def may_add(self, principal) -> bool:
        return policies.agent_may_publish(principal)

    def may_change(self, principal, obj) -> bool:
        return obj is None or policies.agent_may_modify(principal, obj)

    def may_delete(self, principal, obj) -> bool:
        return obj is None or policies.agent_may_delete(principal, obj)

    def may_toggle(self, principal, obj) -> bool:
        return obj is None or policies.agent_may_toggle(principal, obj)

    @admin.display(description="skills")
    def skill_count(self, obj: Agent) -> int:
        return obj.num_skills

    @admin.display(description="outbound headers")
    def outbound_headers(self, obj: Agent) -> str:
        return ", ".join(sorted(obj.headers)) or "—"

    @admin.display(description="signed card")
    def card_signed(self, obj: Agent) -> str:
        return (
            SIGNED_CARD_NOTE if obj.signed_card is not None else "not signed: served with the gateway's URLs"
        )

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
