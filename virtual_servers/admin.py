"""Virtual servers in the operator console (administrators only): a definition's own fields, its members
(one row of plain fields each: virtual_servers/member_forms.py) and the skills it serves, checked by the
one rule and saved through the services, so the console validates and audits exactly like the API. The
page lists the tools clients see and those a member carries that collide with another's, left out by the
gateway."""

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join

from core.admin import ConsoleModelAdmin
from core.validators import normalize_path
from virtual_servers.member_forms import MemberFormSet, initial_of
from virtual_servers.models import VirtualServer
from virtual_servers.rules import DefinitionRefused
from virtual_servers.selectors import definition_of, left_out, tools_seen
from virtual_servers.services import (
    definition_checked,
    virtual_server_create,
    virtual_server_delete,
    virtual_server_update,
)


class VirtualServerForm(forms.ModelForm):
    class Meta:
        model = VirtualServer
        fields = ("path", "name", "description", "is_enabled", "tool_search", "a2a", "skills")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["path"].validators = []  # the path is normalized first (clean_path), then checked
        stored = definition_of(self.instance)["members"] if self.instance.pk else []
        initial = [initial_of(member) for member in stored]
        self.member_forms = MemberFormSet(self.data or None, initial=initial, prefix="members")
        if self.instance.pk:
            self.fields["path"].disabled = True

    def clean_path(self):
        return normalize_path(self.cleaned_data["path"])  # checked as written by the service's rule

    @property
    def changed_data(self):
        """The form's own changed fields, and "members" when a member's row changed."""
        changed = list(super().changed_data)
        return [*changed, "members"] if self.member_forms.has_changed() else changed

    def clean(self):
        data = super().clean()
        if not self.member_forms.is_valid():
            raise ValidationError("A member's row has a problem: see the members below.")
        data["members"] = self.member_forms.members()
        return data

    def validate_unique(self):
        return None  # the service says when a path is taken, in the rule's words

    def definition(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data.get("name", ""),
            "description": data.get("description", ""),
            "is_enabled": data.get("is_enabled", False),
            "tool_search": data.get("tool_search", False),
            "a2a": data.get("a2a", False),
            "members": data.get("members"),
            "skills": [skill.path for skill in data.get("skills") or []],
        }

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        try:
            self.checked = self._checked()
        except DefinitionRefused as refused:
            for field, problem in refused.problems.items():
                self.add_error(field if field in self.fields else None, problem)

    def _checked(self):
        path = self.instance.path if self.instance.pk else self.cleaned_data.get("path", "")
        return definition_checked(
            self.definition(), path=path, existing=self.instance if self.instance.pk else None
        )


@admin.register(VirtualServer)
class VirtualServerAdmin(ConsoleModelAdmin):
    form = VirtualServerForm
    change_form_template = "admin/virtual_servers/virtualserver/change_form.html"
    list_display = ("path", "name", "is_enabled", "updated_at")
    list_filter = ("is_enabled",)
    search_fields = ("path", "name")
    readonly_fields = ("tools_clients_see", "left_out_tools")
    filter_horizontal = ("skills",)

    @admin.display(description="Tools clients see")
    def tools_clients_see(self, obj):
        seen = tools_seen(obj) if obj and obj.pk else []
        if not seen:
            return "None yet: no carried tool of its members is known."
        rows = format_html_join(
            "",
            '<li><code>{}</code> <span class="quiet">from {}{}</span></li>',
            ((name, server, f" ({own})" if own != name else "") for name, server, own in seen),
        )
        return format_html('<ul class="tools-seen">{}</ul>', rows)

    @admin.display(description="Left out")
    def left_out_tools(self, obj):
        notes = left_out(obj) if obj and obj.pk else []
        return "\n".join(notes) or "Nothing: every carried tool has a name of its own."

    def service_save(self, request, obj, form, change):
        if change:
            return virtual_server_update(actor=request.user, virtual=obj, definition=form.definition())
        return virtual_server_create(actor=request.user, path=obj.path, definition=form.definition())

    def save_related(self, request, form, formsets, change):
        return None  # members are stored by the service

    def service_delete(self, request, instance):
        virtual_server_delete(actor=request.user, virtual=instance)
