"""The bases of every operator-console ModelAdmin.

- `ConsoleModelAdmin`: who may see, add, change, delete and toggle which row is the registry's rule (the
  app's policies.py, through the caller's Principal), never Django's model permissions. A model without
  a rule of its own is for registry administrators (superusers and the mcp-registry-admin group).
- `ServiceModelAdmin`: saves, deletes and bulk toggles go through the app's services, so the admin
  validates and audits exactly like the APIs.
- `ReadOnlyModelAdmin`: records the system writes; the console only reads them.

Every list of the console filters by the filters its admin declares and nothing else (`lookup_allowed`):
Django would otherwise accept a lookup on any local field in the URL (`?headers__X-Api-Key__startswith=`),
which reads a secret a character at a time. A model's `SECRET_FIELDS` (credentials, and the hashes of
credentials) are never filtered, searched, sorted or shown, whatever an admin declares.

Every action asks the same policy as the pages: it is offered only to a caller with the permissions it
declares (`change` when it declares none), and runs only on the selected rows the caller may change (or
delete) by the model's `may_*` rule.
"""

from django.contrib import admin, messages
from django.contrib.admin.filters import SimpleListFilter
from django.contrib.admin.utils import get_fields_from_path
from django.db import models
from django.db.models.constants import LOOKUP_SEP

# The suffixes Django's own list filters put after a field's path in the list URL.
FIELD_FILTER_SUFFIXES = ("", "exact", "isnull", "in", "gte", "gt", "lt", "lte", "isempty")
ACTION_ROW_RULES = {
    "change": "may_change",
    "delete": "may_delete",
    "view": "may_view",
    "toggle": "may_toggle",
}


def secret_fields(model) -> frozenset[str]:
    """Fields of `model` holding secrets (its SECRET_FIELDS)."""
    return frozenset(getattr(model, "SECRET_FIELDS", ()))


class ConsoleModelAdmin(admin.ModelAdmin):
    """Subclasses answer the `may_*` questions with their app's policies; the default is "administrators
    only". The caller's Principal comes from the console's site (`principal_of(request)`).

    The console never writes a row itself: a save is `service_save` (the saved row back) and a deletion
    `service_delete`, which a subclass that writes names with its app's services (audited as on every
    other surface)."""

    def service_save(self, request, obj, form, change):
        raise NotImplementedError(f"{type(self).__name__} names no service for its writes")

    def service_delete(self, request, instance) -> None:
        raise NotImplementedError(f"{type(self).__name__} names no service for its deletions")

    def save_model(self, request, obj, form, change):
        if change and not form.changed_data:
            return  # a page of read-only fields saved as it is: nothing to write
        obj.pk = self.service_save(request, obj, form, change).pk
        obj.refresh_from_db()  # the row as the service wrote it: the console's message names it so

    def delete_model(self, request, obj):
        self.service_delete(request, obj)

    def delete_queryset(self, request, queryset):
        for instance in queryset:
            self.service_delete(request, instance)

    def may_view(self, principal, obj) -> bool:
        """May see `obj`, or, for None, this model's list at all."""
        return principal.is_admin

    def may_add(self, principal) -> bool:
        return principal.is_admin

    def may_change(self, principal, obj) -> bool:
        """May change `obj`, or, for None, some row of this model."""
        return principal.is_admin

    def may_delete(self, principal, obj) -> bool:
        return self.may_change(principal, obj)

    def may_toggle(self, principal, obj) -> bool:
        return self.may_change(principal, obj)

    def shown(self, principal, queryset):
        """The rows of `queryset` the list shows the caller."""
        return queryset if principal.is_admin else queryset.none()

    def principal(self, request):
        return self.admin_site.principal_of(request)

    # -- lists: declared filters only, secrets never ------------------------------------------------

    def declared_lookups(self, request) -> set[str]:
        """The query parameters of the filters this admin declares (and of its date hierarchy)."""
        lookups: set[str] = set()
        paths = [self.date_hierarchy] if self.date_hierarchy else []
        for item in self.get_list_filter(request):
            if isinstance(item, type) and issubclass(item, SimpleListFilter):
                lookups.add(item.parameter_name)
            else:
                paths.append(item[0] if isinstance(item, list | tuple) else item)
        for path in paths:
            field = get_fields_from_path(self.model, path)[-1]
            if field.is_relation and field.target_field is not None:
                lookups.update({f"{path}__{field.target_field.name}__exact", f"{path}__isnull"})
            else:
                lookups.update(f"{path}__{suffix}" if suffix else path for suffix in FIELD_FILTER_SUFFIXES)
        if self.date_hierarchy:
            lookups.update(f"{self.date_hierarchy}__{part}" for part in ("year", "month", "day"))
        return lookups

    def lookup_allowed(self, lookup, value, request=None):
        if lookup.split(LOOKUP_SEP)[0] in secret_fields(self.model):
            return False
        return lookup in self.declared_lookups(request)

    def get_search_fields(self, request):
        secret = secret_fields(self.model)
        return [
            name
            for name in super().get_search_fields(request)
            if name.lstrip("^=@").split(LOOKUP_SEP)[0] not in secret
        ]

    def get_sortable_by(self, request):
        secret = secret_fields(self.model)
        return [name for name in super().get_sortable_by(request) if name not in secret]

    # -- actions: the same policy as the pages ------------------------------------------------------

    def get_actions(self, request):
        actions = {}
        for name, (function, action_name, description) in super().get_actions(request).items():
            needed = getattr(function, "allowed_permissions", None) or ("change",)
            if all(getattr(self, f"has_{permission}_permission")(request) for permission in needed):
                actions[name] = (self._rows_ruled(function, needed), action_name, description)
        return actions

    def _rows_ruled(self, function, needed):
        """`function` run on the selected rows the caller may act on by `needed`'s row rules."""
        rules = [ACTION_ROW_RULES[permission] for permission in needed if permission in ACTION_ROW_RULES]

        def ruled(modeladmin, request, queryset):
            principal = modeladmin.principal(request)
            allowed = [
                obj.pk for obj in queryset if all(getattr(modeladmin, rule)(principal, obj) for rule in rules)
            ]
            return function(modeladmin, request, queryset.filter(pk__in=allowed))

        ruled.__name__ = getattr(function, "__name__", "action")
        ruled.allowed_permissions = needed
        ruled.short_description = getattr(function, "short_description", None)
        return ruled

    def get_queryset(self, request):
        queryset, principal = super().get_queryset(request), self.principal(request)
        return queryset if principal.is_admin else self.shown(principal, queryset)

    def has_module_permission(self, request):
        principal = self.principal(request)
        return principal.is_admin or self.may_view(principal, None)

    def has_view_permission(self, request, obj=None):
        principal = self.principal(request)
        return principal.is_admin or self.may_view(principal, obj)

    def has_add_permission(self, request, obj=None):
        return self.may_add(self.principal(request))

    def has_change_permission(self, request, obj=None):
        return self.may_change(self.principal(request), obj)

    def has_delete_permission(self, request, obj=None):
        return self.may_delete(self.principal(request), obj)

    def has_toggle_permission(self, request, obj=None):
        """The enable and disable actions' permission (`permissions=["toggle"]`)."""
        return self.may_toggle(self.principal(request), obj)


class ServiceModelAdmin(ConsoleModelAdmin):
    """Subclasses name their services; this class maps the admin's hooks onto them."""

    editable_fields: tuple[str, ...] = ()
    related_fields: tuple[str, ...] = ()  # many-to-many fields, written by service_relations
    readonly_on_change: tuple[str, ...] = ()  # identity fields the services never change
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def service_create(self, request, obj, fields: dict):
        raise NotImplementedError

    def service_update(self, request, instance, fields: dict):
        raise NotImplementedError

    def service_toggle(self, request, instance, enabled: bool):
        raise NotImplementedError(f"{type(self).__name__} has no toggle")

    def service_relations(self, request, instance, relations: dict) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no related fields")

    def get_deleted_objects(self, objs, request):
        """What a deletion removes, listed on its confirmation page. Deleting is the service's (it
        removes what belongs to the row, as its model says), so the only permission asked is the row's
        own, not one per related model: records only the system writes (a mirrored upstream's versions,
        a server's tools) go with their row."""
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def get_readonly_fields(self, request, obj=None):
        readonly = tuple(super().get_readonly_fields(request, obj))
        if obj is not None:
            readonly = (*self.readonly_on_change, *readonly)
        readonly = (*readonly, *self._system_fields(readonly, adding=obj is None))
        toggles = any(field.name == "is_enabled" for field in self.model._meta.fields)
        if toggles and obj is not None and not self.may_toggle(self.principal(request), obj):
            readonly = (*readonly, "is_enabled")
        return readonly

    def _system_fields(self, readonly, adding: bool) -> tuple[str, ...]:
        """The model's fields no service of this admin writes (the system's own: a scanner's version, the
        dates of pins): shown, never offered for editing, since a save would not keep them."""
        if not self.editable_fields:
            return ()
        written = {*self.editable_fields, *self.related_fields, "is_enabled"}
        written |= set(self.readonly_on_change) if adding else set()
        left_out = {*(self.exclude or ()), *readonly}
        return tuple(
            field.name
            for field in self.model._meta.fields
            if field.editable and not field.primary_key and field.name not in written | left_out
        )

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in form.changed_data if name in self.editable_fields}
        if change:
            instance = self.model.objects.get(pk=obj.pk)
            self.service_update(request, instance, fields)
            if "is_enabled" in form.changed_data and self.may_toggle(self.principal(request), instance):
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

    @admin.action(description="Enable selected %(verbose_name_plural)s", permissions=["toggle"])
    def enable_selected(self, request, queryset):
        self._toggle_many(request, queryset, enabled=True)

    @admin.action(description="Disable selected %(verbose_name_plural)s", permissions=["toggle"])
    def disable_selected(self, request, queryset):
        self._toggle_many(request, queryset, enabled=False)

    def _toggle_many(self, request, queryset, *, enabled: bool) -> None:
        changed = [obj for obj in queryset if obj.is_enabled != enabled]  # (rows ruled by get_actions)
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


class ReadOnlyModelAdmin(ConsoleModelAdmin):
    """Records the console only reads: written by the system (tool listings, health history, the audit
    trail, metric rows), never added, edited or deleted by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
