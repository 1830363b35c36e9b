"""The base of every operator-console ModelAdmin that writes: saves, deletes and bulk toggles go
through the app's services, so the admin validates and audits exactly like the APIs."""

from django.contrib import admin, messages
from django.db import models


class ServiceModelAdmin(admin.ModelAdmin):
    """Subclasses name their services; this class maps the admin's hooks onto them."""

    editable_fields: tuple[str, ...] = ()
    related_fields: tuple[str, ...] = ()  # many-to-many fields, written by service_relations
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

    def service_relations(self, request, instance, relations: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no related fields")

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

    def save_related(self, request, form, formsets, change):
        """The many-to-many fields go to `service_relations` instead of the form's own save."""
        relations = related_values(form, self.related_fields)
        super().save_related(request, form, formsets, change)
        if relations:
            self.service_relations(request, form.instance, relations)

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


def related_values(form, names) -> dict:
    """Take the many-to-many values `names` out of a saved admin form, so its `save_m2m` leaves them to
    a service; {name: values} of those the form had."""
    return {name: form.cleaned_data.pop(name) for name in names if name in form.cleaned_data}


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """Records the console only reads: written by the system (tool listings, health history, the audit
    trail, metric rows), never added, edited or deleted by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
