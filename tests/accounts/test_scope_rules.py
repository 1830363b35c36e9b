"""Malformed scope rules are refused by every writer (services, scopes.yml import, admin), never read
generously."""

import pytest
from django.core.exceptions import ValidationError

from accounts.models import Scope
from accounts.services import scope_create, scope_update, scopes_import

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"server": "/fx"}, "Server rules must be a list of {server, methods, tools} rules."),
        (["/fx"], "Rule 1: must be an object with server, methods and tools."),
        (
            [{"methods": ["tools/list"]}],
            "Rule 1: server must be a path such as /weather, or * for every server.",
        ),
        (
            [{"server": "/fx", "methods": ["tools/call"], "tool": ["convert"]}],
            "Rule 1: unknown key 'tool' (the keys are server, methods, tools).",
        ),
        ([{"server": "/fx"}], "Rule 1: methods must name at least one MCP method, or *."),
        (
            [{"server": "/fx", "methods": ["tools/call, tools/list"]}],
            "Rule 1: methods 'tools/call, tools/list' is not a method "
            "(one name per entry, no commas or spaces).",
        ),
        ([{"server": "/fx", "methods": "tools/call"}], "Rule 1: methods must be a list of methods or *."),
        (
            [{"server": "/fx", "methods": ["tools/call"], "tools": "convert"}],
            "Rule 1: tools must be a list of tools or *.",
        ),
        (
            [{"server": "/fx", "methods": ["tools/call"], "tools": ["a b"]}],
            "Rule 1: tools 'a b' is not a tool (one name per entry, no commas or spaces).",
        ),
        (
            [{"server": "/../x", "methods": ["*"]}],
            "Rule 1: server '/../x': Path must be '/' and segments of lower-case letters, digits, '-' or '_' "
            "separated by '/' (no empty segments, no '..', no query or fragment).",
        ),
    ],
)
def test_malformed_server_rules_are_refused(rules, message):
    with pytest.raises(ValidationError) as refused:
        scope_create(actor=None, name="broken", server_rules=rules)

    assert refused.value.message_dict == {"server_rules": [message]}
    assert Scope.objects.count() == 0


@pytest.mark.parametrize(
    ("permissions", "message"),
    [
        (["list_service"], "UI permissions must map a permission name to a list of paths or all."),
        (
            {"list_services": ["all"]},
            "'list_services' is not a permission (known: list_service, "
            "register_service, toggle_service, modify_service, health_check_service, list_agents, "
            "publish_agent, modify_agent, toggle_agent, delete_agent).",
        ),
        ({"list_service": []}, "list_service: must be a list of paths, or all."),
        (
            {"list_service": ["/fx", 3]},
            "list_service: must be a path such as /weather, or * for every server.",
        ),
    ],
)
def test_malformed_ui_permissions_are_refused(permissions, message):
    scope = scope_create(actor=None, name="ok")

    with pytest.raises(ValidationError) as refused:
        scope_update(actor=None, scope=scope, ui_permissions=permissions)

    assert refused.value.message_dict == {"ui_permissions": [message]}
    assert Scope.objects.get().ui_permissions == {}


def test_well_formed_rules_in_every_spelling_are_kept():
    rules = [
        {"server": "*", "methods": ["initialize", "tools/list"], "tools": "*"},
        {"server": "currenttime", "methods": ["tools/call"], "tools": ["current_time_by_timezone"]},
        {"server": "/registry", "methods": ["GET", "POST"]},
        {"server": "/fx", "methods": "all"},
    ]
    ui = {"list_service": ["all"], "toggle_service": ["fx", "/team/weather"]}

    scope = scope_create(actor=None, name="fine", server_rules=rules, ui_permissions=ui)

    assert (scope.server_rules, scope.ui_permissions) == (rules, ui)


def test_an_import_with_a_malformed_rule_changes_nothing():
    document = {
        "good": [{"server": "/fx", "methods": ["tools/list"]}],
        "bad": [{"server": "/fx", "methods": ["tools/call"], "tools": "convert"}],
    }

    with pytest.raises(ValidationError):
        scopes_import(actor=None, document=document)

    assert Scope.objects.count() == 0


def test_the_import_command_says_which_rule_is_malformed(tmp_path):
    from django.core.management import CommandError, call_command

    path = tmp_path / "scopes.yml"
    path.write_text("bad:\n  - server: /fx\n    methods: [tools/call]\n    tools: convert\n")

    with pytest.raises(CommandError) as refused:
        call_command("import_scopes", str(path))

    assert (
        str(refused.value)
        == f"{path}: nothing imported: server_rules: Rule 1: tools must be a list of tools or *."
    )
