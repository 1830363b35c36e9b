"""A virtual server's members as the console edits them: one row of plain fields per member (its server,
its key, which tools, prompts and resources it carries, the names clients see its tools by, and, only
where needed, a tool's description and fixed arguments), turned into the definition's member shape
(virtual_servers/rules.py), which the one rule then checks as it checks the API's."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from servers.models import Server
from virtual_servers.rules import SELECTIONS

MODES = (("all", "all"), ("include", "only these"), ("exclude", "all but these"))
EXTRA_ROWS = 2  # empty member rows offered on the form


class MemberForm(forms.Form):
    server = forms.ChoiceField(required=False)
    key = forms.CharField(required=False, max_length=40, help_text="Empty: the path's last segment.")
    tools_mode = forms.ChoiceField(choices=MODES, initial="all", label="Tools")
    tools_names = forms.CharField(required=False, label="tool names", help_text="Separated by commas.")
    prompts_mode = forms.ChoiceField(choices=MODES, initial="all", label="Prompts")
    prompts_names = forms.CharField(required=False, label="prompt names")
    resources_mode = forms.ChoiceField(choices=MODES, initial="all", label="Resources")
    resources_names = forms.CharField(required=False, label="resource URIs")
    aliases = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One a line: the tool's own name = the name clients see.",
    )
    settings = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        label="descriptions and fixed arguments",
        help_text='Only where needed, by tool: {"search": {"description": "…", "fixed": {"repo": "a/b"}}}',
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        paths = Server.objects.order_by("path").values_list("path", flat=True)
        self.fields["server"].choices = [("", "—"), *((path, path) for path in paths)]

    def clean_aliases(self) -> dict[str, str]:
        aliases = {}
        for number, line in enumerate(self.cleaned_data["aliases"].splitlines(), start=1):
            if not line.strip():
                continue
            own, sep, alias = line.partition("=")
            if not sep or not own.strip() or not alias.strip():
                raise ValidationError(f"Line {number}: write it as own_name = name clients see.")
            aliases[own.strip()] = alias.strip()
        return aliases

    def clean_settings(self) -> dict:
        text = self.cleaned_data["settings"].strip()
        if not text:
            return {}
        try:
            settings = json.loads(text)
        except ValueError as invalid:
            raise ValidationError(f"Not JSON: {invalid}.") from None
        if not isinstance(settings, dict) or not all(isinstance(v, dict) for v in settings.values()):
            raise ValidationError('An object by tool name: {"search": {"description": "…"}}.')
        return settings

    def member(self) -> dict | None:
        """The member in the definition's shape, or None for an empty row."""
        data = self.cleaned_data
        if not data.get("server"):
            return None
        member = {"server": data["server"]}
        if data.get("key"):
            member["key"] = data["key"].strip()
        for selection in SELECTIONS:
            mode = data.get(f"{selection}_mode") or "all"
            names = [n.strip() for n in (data.get(f"{selection}_names") or "").split(",") if n.strip()]
            member[selection] = {mode: names} if mode != "all" else {}
        settings = {name: dict(setting) for name, setting in data.get("settings", {}).items()}
        for own, alias in data.get("aliases", {}).items():
            settings.setdefault(own, {})["alias"] = alias
        if settings:
            member["tool_settings"] = settings
        return member


class BaseMemberFormSet(forms.BaseFormSet):
    def members(self) -> list[dict]:
        return [
            member
            for form in self.forms
            if not (self.can_delete and self._should_delete_form(form)) and (member := form.member())
        ]


MemberFormSet = forms.formset_factory(
    MemberForm, formset=BaseMemberFormSet, extra=EXTRA_ROWS, can_delete=True
)


def initial_of(member: dict) -> dict:
    """A stored member (the definition's shape) as a row's initial values."""
    row = {"server": member["server"], "key": member.get("key", "")}
    for selection in SELECTIONS:
        chosen = member.get(selection) or {}
        mode = next(iter(chosen), "all")
        row[f"{selection}_mode"] = mode
        row[f"{selection}_names"] = ", ".join(chosen.get(mode, [])) if mode != "all" else ""
    settings = {name: dict(setting) for name, setting in (member.get("tool_settings") or {}).items()}
    row["aliases"] = "\n".join(
        f"{own} = {setting.pop('alias')}" for own, setting in settings.items() if "alias" in setting
    )
    rest = {own: setting for own, setting in settings.items() if setting}
    row["settings"] = json.dumps(rest, indent=2) if rest else ""
    return row
