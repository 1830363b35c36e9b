"""The admin's structured scope form: server rules as rows (a server picked from the registered ones,
methods ticked from the known MCP methods, tool names), UI permissions as one line of paths per
permission, the server.json names it may publish as one line of patterns. The rows are assembled into
the stored JSON and checked by the same rules as every other writer (accounts/scope_rules.py, through
Scope.clean())."""

import json

from django import forms
from django.utils.html import format_html, format_html_join

from accounts.choices import UiPermission
from accounts.models import Scope
from accounts.scope_rules import ANY_VALUES, KNOWN_METHODS

BLANK_RULE_ROWS = 2
ANY = "*"
# The usual method sets a rule row offers in one choice (the ticks stay for anything else).
READ_ONLY = (
    "initialize",
    "ping",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
)
PRESETS = {
    "read": ("read-only: list and read", list(READ_ONLY)),
    "call": ("read-only and call tools", [*READ_ONLY, "tools/call"]),
    "all": ("everything", ANY),
}


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _as_text(value) -> str:
    if isinstance(value, str):
        return value
    return ", ".join(str(item) for item in value or [])


class ServerRulesWidget(forms.Widget):
    """One row per rule, and a few blank rows for new ones; a row left blank is no rule."""

    def __init__(self, server_paths=(), server_tools=None, attrs=None):
        super().__init__(attrs)
        self.server_paths = list(server_paths)
        self.server_tools = dict(server_tools or {})  # path -> its known tools, offered as ticks

    def value_from_datadict(self, data, files, name):
        count = str(data.get(f"{name}-rows", ""))
        if not count.isdigit():
            return None  # not the form this widget drew: refused, never read as "no rules"
        rules = []
        for row in range(min(int(count), 500)):
            server = (data.get(f"{name}-{row}-server") or "").strip()
            methods = [method for method in data.getlist(f"{name}-{row}-methods") if method.strip()]
            methods += _split(data.get(f"{name}-{row}-other_methods") or "")
            preset = PRESETS.get(str(data.get(f"{name}-{row}-preset") or ""))
            if preset is not None:
                methods = [ANY] if preset[1] == ANY else list(preset[1])
            tools = (data.get(f"{name}-{row}-tools") or "").strip()
            ticked = [tool for tool in data.getlist(f"{name}-{row}-tool_choices") if tool.strip()]
            if not (server or methods or tools or ticked):
                continue
            rule = {"server": server, "methods": ANY if ANY in methods else list(dict.fromkeys(methods))}
            if tools in ANY_VALUES:
                rule["tools"] = ANY
            elif tools or ticked:
                rule["tools"] = list(dict.fromkeys([*ticked, *_split(tools)]))
            rules.append(rule)
        return rules

    def render(self, name, value, attrs=None, renderer=None):
        rules = value if isinstance(value, list) else []
        rows = [*rules, *([{}] * BLANK_RULE_ROWS)]
        body = format_html_join(
            "", "{}", ((self._row(name, index, rule),) for index, rule in enumerate(rows))
        )
        return format_html(
            '<input type="hidden" name="{}-rows" value="{}" data-rule-rows>'
            '<table class="scope-rules" data-scope-rules data-server-tools="{}"><thead><tr><th>Server</th>'
            "<th>Methods</th><th>Tools (for tools/call)</th></tr></thead><tbody>{}</tbody></table>"
            '<p><button type="button" class="button" data-add-rule hidden>Add a rule</button></p>',
            name,
            len(rows),
            json.dumps(self.server_tools),
            body,
        )

    def _row(self, name, index, rule):
        rule = rule if isinstance(rule, dict) else {}
        server = str(rule.get("server") or "")
        choices = [("", "—"), (ANY, "* every server"), *((path, path) for path in self.server_paths)]
        if server and server not in {value for value, _ in choices}:
            choices.append((server, f"{server} (not registered)"))
        options = format_html_join(
            "",
            '<option value="{}"{}>{}</option>',
            ((value, " selected" if value == server else "", label) for value, label in choices),
        )
        raw_methods = rule.get("methods") or []
        methods = (
            [ANY]
            if raw_methods in ANY_VALUES
            else [str(m) for m in raw_methods]
            if isinstance(raw_methods, list)
            else []
        )
        ticks = format_html_join(
            "",
            '<label class="method"><input type="checkbox" name="{}" value="{}"{}> {}</label>',
            (
                (f"{name}-{index}-methods", method, " checked" if method in methods else "", method)
                for method in (ANY, *KNOWN_METHODS)
            ),
        )
        others = ", ".join(m for m in methods if m != ANY and m not in KNOWN_METHODS)
        presets = format_html_join(
            "", '<option value="{}">{}</option>', ((key, label) for key, (label, _) in PRESETS.items())
        )
        raw_tools = rule.get("tools", "")
        named = (
            []
            if raw_tools in ANY_VALUES
            else [str(t) for t in raw_tools]
            if isinstance(raw_tools, list)
            else []
        )
        known = self.server_tools.get(server, [])
        tool_ticks = format_html_join(
            "",
            '<label class="method"><input type="checkbox" name="{}" value="{}"{}> {}</label>',
            (
                (f"{name}-{index}-tool_choices", tool, " checked" if tool in named else "", tool)
                for tool in known
            ),
        )
        typed = (
            _as_text(raw_tools) if raw_tools in ANY_VALUES else ", ".join(t for t in named if t not in known)
        )
        return format_html(
            "<tr data-rule-row>"
            '<td><select name="{}-{}-server" aria-label="Server of rule {}" data-rule-server>{}</select></td>'
            '<td><select name="{}-{}-preset" aria-label="Method set of rule {}"><option value="">the methods '
            "ticked below</option>{}</select>"
            '<div class="methods">{}</div><input name="{}-{}-other_methods" value="{}" '
            'placeholder="other methods, comma-separated" aria-label="Other methods of rule {}"></td>'
            '<td><div class="methods" data-rule-tools>{}</div><input name="{}-{}-tools" value="{}" '
            'placeholder="other tools, comma-separated, or *" aria-label="Tools of rule {}"></td>'
            "</tr>",
            name, index, index + 1, options,
            name, index, index + 1, presets,
            ticks, name, index, others, index + 1,
            tool_ticks, name, index, typed, index + 1,
        )  # fmt: skip


class UiPermissionsWidget(forms.Widget):
    """One line per permission: the paths it applies to, comma-separated, or `all`."""

    def value_from_datadict(self, data, files, name):
        permissions = {}
        for permission in UiPermission.values:
            paths = _split(data.get(f"{name}-{permission}") or "")
            if paths:
                permissions[permission] = paths
        return permissions

    def render(self, name, value, attrs=None, renderer=None):
        value = value if isinstance(value, dict) else {}
        rows = format_html_join(
            "",
            '<tr><th scope="row"><label for="id_{0}-{1}">{1}</label></th><td><input id="id_{0}-{1}" '
            'name="{0}-{1}" value="{2}" placeholder="/weather, /team/maps or all"></td></tr>',
            ((name, permission, _as_text(value.get(permission, ""))) for permission in UiPermission.values),
        )
        return format_html('<table class="scope-ui">{}</table>', rows)


class NamePatternsWidget(forms.TextInput):
    """The server.json names a scope may publish, comma-separated."""

    def format_value(self, value):
        return _as_text(value)

    def value_from_datadict(self, data, files, name):
        return _split(data.get(name) or "")


class StructuredField(forms.Field):
    """A field whose widget already assembles the stored value; the model's `clean()` checks it, so the
    admin refuses exactly what every other writer refuses."""

    def validate(self, value):
        if value is None:
            raise forms.ValidationError("The form arrived incomplete; reload the page and try again.")


class ScopeForm(forms.ModelForm):
    server_rules = StructuredField(
        required=False,
        help_text=(
            "Which MCP calls the scope allows: each row names a server (or * for every server), the "
            "methods it may call and, for tools/call, which tools (comma-separated, or * for all). "
            "A row without methods is refused, never read as everything; leave a row blank to remove it."
        ),
    )
    ui_permissions = StructuredField(
        required=False,
        help_text="Registry actions the scope allows, each for a list of server or agent paths, or all.",
    )
    publish_names = StructuredField(
        required=False,
        widget=NamePatternsWidget(attrs={"placeholder": "com.acme/*, io.github.acme/*", "size": 60}),
        help_text=(
            "server.json names the scope may publish to /v0.1/publish (and whose versions' status it may "
            "change), comma-separated; * stands for any characters. Administrators may publish any name."
        ),
    )

    class Meta:
        model = Scope
        fields = ("name", "description", "server_rules", "ui_permissions", "publish_names", "groups")

    server_paths = staticmethod(lambda: [])  # the paths a rule may suggest: set by ScopeAdmin.get_form
    server_tools = staticmethod(lambda: {})  # each server's known tools, offered as ticks: the same

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["server_rules"].widget = ServerRulesWidget(
            server_paths=self.server_paths(), server_tools=self.server_tools()
        )
        self.fields["ui_permissions"].widget = UiPermissionsWidget()
