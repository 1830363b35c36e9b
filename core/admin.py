"""The base of every operator-console ModelAdmin that writes: saves, deletes and bulk toggles go
through the app's services, so the admin validates and audits exactly like the APIs."""

from django.contrib import admin, messages
from django.db import models


class ServiceModelAdmin(admin.ModelAdmin):
    """Subclasses name their services; this class maps the admin's hooks onto them."""

    editable_fields: tuple[str, ...] = ()
    readonly_on_change: tuple[str, ...] = ()  # identity fields the services never change
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def service_create(self, request, obj, fields: dict):
        raise NotImplementedError

    def service_update(self, request, instance, fields: dict):
        raise NotImplementedError

    def service_delete(self, request, instance) -> None:
        raise NotImplementedError

    def service_toggle(self, request, instance, enabled: bool):
        raise NotImplementedError(f"{type(self).__name__} has no toggle")

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)
        return (*self.readonly_on_change, *readonly) if obj is not None else readonly

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in form.changed_data if name in self.editable_fields}
        if change:
            instance = self.model.objects.get(pk=obj.pk)
            self.service_update(request, instance, fields)
            if "is_enabled" in form.changed_data:
                self.service_toggle(request, instance, obj.is_enabled)
        else:
            instance = self.service_create(request, obj, fields)
        obj.pk = instance.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        self.service_delete(request, obj)

    def delete_queryset(self, request, queryset):
        for instance in queryset:
            self.service_delete(request, instance)

    @admin.action(description="Enable selected %(verbose_name_plural)s", permissions=["change"])
    def enable_selected(self, request, queryset):
        self._toggle_many(request, queryset, enabled=True)

    @admin.action(description="Disable selected %(verbose_name_plural)s", permissions=["change"])
    def disable_selected(self, request, queryset):
        self._toggle_many(request, queryset, enabled=False)

    def _toggle_many(self, request, queryset, *, enabled: bool) -> None:
        changed = [obj for obj in queryset if obj.is_enabled != enabled]
        for instance in changed:
            self.service_toggle(request, instance, enabled)
        state = "enabled" if enabled else "disabled"
        self.message_user(
            request, f"{len(changed)} {self.model._meta.verbose_name_plural} {state}.", messages.SUCCESS
        )


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """Records the console only reads: written by the system (tool listings, health history, the audit
    trail, metric rows), never added, edited or deleted by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
