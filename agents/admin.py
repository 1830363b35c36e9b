"""Operator console for agents. Saves, deletes and bulk actions go through the services."""

from django.contrib import admin, messages
from django.db import models

from agents import services
from agents.models import Agent


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ("path", "name", "visibility", "is_enabled", "skill_count", "owner", "updated_at")
    list_filter = ("is_enabled", "visibility", "embedding_dirty", "provider")
    search_fields = ("path", "name", "description", "url", "owner__username")
    list_select_related = ("owner",)
    list_per_page = 50
    ordering = ("path",)
    autocomplete_fields = ("owner",)
    filter_horizontal = ("groups",)
    readonly_fields = ("skill_count", "has_embedding", "embedding_dirty", "registered_at", "updated_at")
    exclude = ("embedding",)
    actions = ["enable_selected", "disable_selected"]

    def get_readonly_fields(self, request, obj=None):
        return ("path", *self.readonly_fields) if obj is not None else self.readonly_fields

    @admin.display(description="skills")
    def skill_count(self, obj: Agent) -> int:
        return obj.num_skills

    @admin.display(description="embedded", boolean=True)
    def has_embedding(self, obj: Agent) -> bool:
        return obj.embedding is not None

    def save_model(self, request, obj, form, change):
        fields = {
            name: form.cleaned_data[name] for name in form.changed_data if name in services.EDITABLE_FIELDS
        }
        if change:
            agent = Agent.objects.get(pk=obj.pk)
            services.agent_update(actor=request.user, agent=agent, **fields)
            if "is_enabled" in form.changed_data:
                services.agent_toggle(actor=request.user, agent=agent, enabled=obj.is_enabled)
        else:
            agent = services.agent_create(actor=obj.owner or request.user, path=obj.path, **fields)
            if obj.is_enabled:
                services.agent_toggle(actor=request.user, agent=agent, enabled=True)
        obj.pk = agent.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        services.agent_delete(actor=request.user, agent=obj)

    def delete_queryset(self, request, queryset):
        for agent in queryset:
            services.agent_delete(actor=request.user, agent=agent)

    @admin.action(description="Enable selected agents", permissions=["change"])
    def enable_selected(self, request, queryset):
        self._toggle(request, queryset, enabled=True)

    @admin.action(description="Disable selected agents", permissions=["change"])
    def disable_selected(self, request, queryset):
        self._toggle(request, queryset, enabled=False)

    def _toggle(self, request, queryset, *, enabled: bool) -> None:
        changed = 0
        for agent in queryset:
            if agent.is_enabled != enabled:
                services.agent_toggle(actor=request.user, agent=agent, enabled=enabled)
                changed += 1
        state = "enabled" if enabled else "disabled"
        self.message_user(request, f"{changed} agent(s) {state}.", messages.SUCCESS)
