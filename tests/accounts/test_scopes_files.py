"""import_scopes / export_scopes speak the reference implementation's scopes.yml."""

import pytest
import yaml
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from accounts.choices import SYSTEM_GROUPS, AuthMethod
from accounts.models import AuditEvent, IdpGroupMapping, Scope
from accounts.principal import principal_for_user
from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.django_db

SAMPLE = PROJECT_DIR / "tests" / "data" / "scopes.yml"


def test_import_creates_scopes_groups_and_mappings(capsys, member):
    call_command("import_scopes", str(SAMPLE))

    assert capsys.readouterr().out.strip() == "imported 5 scopes and 2 groups"
    assert sorted(Scope.objects.values_list("name", flat=True)) == [
        "mcp-registry-admin",
        "mcp-registry-user",
        "mcp-servers-restricted/read",
        "mcp-servers-unrestricted/execute",
        "mcp-servers-unrestricted/read",
    ]
    user_group = Group.objects.get(name="mcp-registry-user")
    assert sorted(user_group.scopes.values_list("name", flat=True)) == [
        "mcp-registry-user",
        "mcp-servers-restricted/read",
    ]
    assert list(IdpGroupMapping.objects.values_list("idp_group", "group__name")) == [
        ("mcp-registry-admin", "mcp-registry-admin"),
        ("mcp-registry-user", "mcp-registry-user"),
    ]
    user = principal_for_user(member("u", "mcp-registry-user"), auth_method=AuthMethod.SESSION)
    assert user.can("list_service", "/currenttime") is True
    assert user.can("toggle_service", "/currenttime") is False
    assert user.allows_mcp("/currenttime", "tools/call", "current_time_by_timezone") is True
    assert user.allows_mcp("/mcpgw", "tools/list") is False
    assert AuditEvent.objects.get().detail == {"scopes": 5, "groups": 2}


def test_import_twice_changes_nothing(capsys):
    call_command("import_scopes", str(SAMPLE))
    first = yaml.safe_dump(_export(capsys))
    call_command("import_scopes", str(SAMPLE))

    assert yaml.safe_dump(_export(capsys)) == first
    assert Scope.objects.count() == 5
    assert IdpGroupMapping.objects.count() == 2


def _export(capsys):
    capsys.readouterr()
    call_command("export_scopes")
    return yaml.safe_load(capsys.readouterr().out)


def test_export_round_trips_the_file(capsys):
    call_command("import_scopes", str(SAMPLE))

    exported = _export(capsys)
    original = yaml.safe_load(SAMPLE.read_text())
    original["group_mappings"] = {group: sorted(names) for group, names in original["group_mappings"].items()}

    assert exported == original  # group scopes come back sorted: a group's scopes are a set


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- just\n- a list\n", "the file must be a mapping at the top level"),
        ("UI-Scopes:\n  x:\n    fly_to_moon: [all]\n", "UI-Scopes.x.fly_to_moon: unknown permission"),
        ("group_mappings:\n  g: not-a-list\n", "group_mappings must map group names to lists of scope names"),
        ("some-scope:\n  - methods: [x]\n", "some-scope: must be a list of {server, methods, tools} rules"),
        ("key: [unclosed\n", "is not valid YAML"),
    ],
)
def test_a_bad_file_is_one_clear_error_and_changes_nothing(tmp_path, text, message):
    path = tmp_path / "scopes.yml"
    path.write_text(text)

    with pytest.raises(CommandError) as caught:
        call_command("import_scopes", str(path))

    assert message in str(caught.value)
    assert Scope.objects.count() == 0
    assert set(Group.objects.values_list("name", flat=True)) == SYSTEM_GROUPS  # only those of the first start


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read .*nope.yml: No such file or directory"):
        call_command("import_scopes", str(tmp_path / "nope.yml"))
