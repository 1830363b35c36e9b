"""Every write the operator console makes to users, groups, memberships, identity-provider mappings and
scopes goes through accounts' services and leaves an audit row saying what changed."""

import pytest
from django.contrib.auth.models import Group

from accounts.models import AuditEvent, IdpGroupMapping, Scope, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.test", "pw")
    client.force_login(root)
    return client


def trail() -> list[tuple[str, str, str, dict]]:
    return [
        (event.actor_name, event.action, event.target, event.detail)
        for event in AuditEvent.objects.order_by("pk")
    ]


def test_creating_a_user_and_changing_their_groups_is_audited(console):
    Group.objects.create(name="analysts")
    added = console.post(
        "/admin/accounts/user/add/",
        {
            "username": "ana",
            "password1": "a-long-passphrase-9",
            "password2": "a-long-passphrase-9",
            "usable_password": "true",
        },
    )
    ana = User.objects.get(username="ana")
    changed = console.post(
        f"/admin/accounts/user/{ana.pk}/change/",
        {
            "username": "ana",
            "email": "ana@example.test",
            "is_active": "on",
            "groups": [Group.objects.get(name="analysts").pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "initial-date_joined_0": "2026-01-01",
            "initial-date_joined_1": "00:00:00",
        },
    )

    assert (added.status_code, changed.status_code) == (302, 302)
    assert trail() == [
        ("root", "user.create", "user:ana", {"fields": ["username"], "password_changed": True}),
        ("root", "user.update", "user:ana", {"fields": ["email"]}),
        ("root", "user.memberships", "user:ana", {"groups_added": ["analysts"], "groups_removed": []}),
    ]
    assert ana.groups.get().name == "analysts"


def test_deleting_a_user_is_audited(console):
    ana = User.objects.create_user("ana")

    response = console.post(f"/admin/accounts/user/{ana.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert trail() == [("root", "user.delete", "user:ana", {})]
    assert not User.objects.filter(username="ana").exists()


def test_a_group_made_in_the_console_is_made_by_the_service_with_its_scope(console):
    response = console.post("/admin/auth/group/add/", {"name": "analysts", "description": "Read the numbers"})

    assert response.status_code == 302
    assert trail() == [
        ("root", "group.create", "group:analysts", {"description": "Read the numbers", "idp": None}),
    ]
    assert Scope.objects.get(name="group:analysts").description == "Read the numbers"


def test_a_group_name_the_api_refuses_is_refused_by_the_console_form(console):
    response = console.post("/admin/auth/group/add/", {"name": "a,b"})

    assert response.status_code == 200
    assert "A group name is 1 to" in response.content.decode()
    assert trail() == []


def test_system_groups_cannot_be_deleted_from_the_console(console):
    group = Group.objects.get_or_create(name="mcp-registry-admin")[0]

    response = console.post(f"/admin/auth/group/{group.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert Group.objects.filter(name="mcp-registry-admin").exists()
    assert trail() == []


def test_identity_provider_mappings_are_audited(console):
    group = Group.objects.create(name="analysts")

    console.post("/admin/accounts/idpgroupmapping/add/", {"idp_group": "finance", "group": group.pk})
    mapping = IdpGroupMapping.objects.get()
    console.post(
        f"/admin/accounts/idpgroupmapping/{mapping.pk}/change/", {"idp_group": "fin", "group": group.pk}
    )
    console.post(f"/admin/accounts/idpgroupmapping/{mapping.pk}/delete/", {"post": "yes"})

    assert trail() == [
        ("root", "idp_mapping.create", "idp_group:finance->group:analysts", {}),
        (
            "root",
            "idp_mapping.update",
            "idp_group:fin->group:analysts",
            {"was": "idp_group:finance->group:analysts"},
        ),
        ("root", "idp_mapping.delete", "idp_group:fin->group:analysts", {}),
    ]
    assert not IdpGroupMapping.objects.exists()


def test_a_scope_made_in_the_console_records_what_it_grants_and_to_whom(console):
    group = Group.objects.create(name="analysts")

    response = console.post(
        "/admin/accounts/scope/add/",
        {
            "name": "fx-callers",
            "description": "Call fx",
            "server_rules-rows": "1",
            "server_rules-0-server": "*",
            "server_rules-0-methods": ["ping"],
            "ui_permissions-list_service": "/fx",
            "publish_names": "",
            "groups": [group.pk],
        },
    )

    assert response.status_code == 302
    assert trail() == [
        (
            "root",
            "scope.create",
            "scope:fx-callers",
            {
                "description": "Call fx",
                "server_rules": [{"server": "*", "methods": ["ping"]}],
                "ui_permissions": {"list_service": ["/fx"]},
                "publish_names": [],
            },
        ),
        ("root", "scope.groups", "scope:fx-callers", {"groups_added": ["analysts"], "groups_removed": []}),
    ]
