"""Virtual servers in the operator console (administrators only): a definition's own fields and its
members as JSON (the shape the API and docs/virtual-servers.md use), checked by the one rule and saved
through the services, so the console validates and audits exactly like the API. Tools a member carries
that collide with another's, left out by the gateway, are listed on the page."""

import json

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from core.admin import ConsoleModelAdmin
from core.validators import normalize_path
from virtual_servers.models import VirtualServer
from virtual_servers.rules import DefinitionRefused
from virtual_servers.selectors import definition_of, left_out
from virtual_servers.services import (
    definition_checked,
    virtual_server_create,
    virtual_server_delete,
    virtual_server_update,
)


class VirtualServerForm(forms.ModelForm):
    members = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 16, "spellcheck": "false"}),
        help_text='A JSON list: [{"server": "/clock", "tools": {"include": ["add"]}, '
        '"tool_settings": {"add": {"alias": "plus", "fixed": {"b": 1}}}}] (docs/virtual-servers.md).',
    )

    class Meta:
        model = VirtualServer
        fields = ("path", "name", "description", "is_enabled")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["path"].validators = []  # the path is normalized first (clean_path), then checked
        if self.instance.pk:
            self.fields["members"].initial = json.dumps(definition_of(self.instance)["members"], indent=2)
            self.fields["path"].disabled = True

    def clean_path(self):
        return normalize_path(self.cleaned_data["path"])  # checked as written by the service's rule

    def clean_members(self):
        try:
            return json.loads(self.cleaned_data["members"])
        except ValueError as invalid:
            raise ValidationError(f"Not JSON: {invalid}.") from None

    def validate_unique(self):
        return None  # the service says when a path is taken, in the rule's words

    def definition(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data.get("name", ""),
            "description": data.get("description", ""),
            "is_enabled": data.get("is_enabled", False),
            "members": data.get("members"),
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
    list_display = ("path", "name", "is_enabled", "updated_at")
    list_filter = ("is_enabled",)
    search_fields = ("path", "name")
    readonly_fields = ("left_out_tools",)

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
