"""The admin's structured scope form: rules as rows picked from registered servers and known methods,
assembled into the stored JSON and refused when malformed."""

import re

import pytest

from accounts.models import AuditEvent, Scope
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/accounts/scope/add/"


@pytest.fixture
def admin_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", "root@example.test", "pw")
    client.force_login(user)
    ServerFactory(path="/fx", name="FX")
    ServerFactory(path="/weather", name="Weather")
    return client


def form(**fields) -> dict:
    base = {"name": "fx-callers", "description": "", "server_rules-rows": "3"}
    return base | fields


def errors(response) -> list[str]:
    return re.findall(r'<ul class="errorlist[^"]*"[^>]*>\s*<li>(.*?)</li>', response.content.decode())


def test_the_form_offers_registered_servers_and_known_methods(admin_client):
    page = admin_client.get(ADD).content.decode()

    servers = re.findall(r'<select name="server_rules-0-server"[^>]*>(.*?)</select>', page)[0]
    assert re.findall(r'<option value="([^"]*)"', servers) == ["", "*", "/fx", "/weather"]
    methods = re.findall(r'name="server_rules-0-methods" value="([^"]+)"', page)
    assert methods[:6] == ["*", "initialize", "notifications/initialized", "ping", "tools/list", "tools/call"]
    assert 'name="ui_permissions-list_service"' in page


def test_rows_become_the_stored_rules(admin_client):
    response = admin_client.post(
        ADD,
        form(
            **{
                "server_rules-0-server": "/fx",
                "server_rules-0-methods": ["initialize", "tools/list", "tools/call"],
                "server_rules-0-tools": "convert_currency, list_currencies",
                "server_rules-1-server": "*",
                "server_rules-1-methods": ["ping"],
                "ui_permissions-list_service": "/fx, /weather",
                "ui_permissions-toggle_service": "all",
                "publish_names": "com.acme/*, io.github.acme/weather",
            }
        ),
    )

    assert response.status_code == 302
    scope = Scope.objects.get(name="fx-callers")
    assert scope.server_rules == [
        {
            "server": "/fx",
            "methods": ["initialize", "tools/list", "tools/call"],
            "tools": ["convert_currency", "list_currencies"],
        },
        {"server": "*", "methods": ["ping"]},
    ]
    assert scope.ui_permissions == {"list_service": ["/fx", "/weather"], "toggle_service": ["all"]}
    assert scope.publish_names == ["com.acme/*", "io.github.acme/weather"]
    assert AuditEvent.objects.get().action == "scope.create"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"server_rules-0-server": "/fx"}, "Rule 1: methods must name at least one MCP method, or *."),
        (
            {"server_rules-0-methods": ["tools/call"], "server_rules-0-tools": "*"},
            "Rule 1: server must be a path such as /weather, or * for every server.",
        ),
        (
            {
                "server_rules-0-server": "/fx",
                "server_rules-0-methods": ["tools/call"],
                "server_rules-0-tools": "a b",
            },
            "Rule 1: tools &#x27;a b&#x27; is not a tool (one name per entry, no commas or spaces).",
        ),
        (
            {"server_rules-0-server": "/fx", "server_rules-0-other_methods": "tools call"},
            "Rule 1: methods &#x27;tools call&#x27; is not a method",
        ),
        ({"ui_permissions-list_service": "/Bad Path"}, "list_service: &#x27;/Bad Path&#x27;: Path must be"),
        ({"publish_names": "acme"}, "&#x27;acme&#x27; is not a name pattern (namespace/name"),
    ],
)
def test_malformed_rows_are_refused(admin_client, fields, message):
    response = admin_client.post(ADD, form(**fields))

    assert response.status_code == 200
    assert len(errors(response)) == 1
    assert errors(response)[0].startswith(message)
    assert Scope.objects.count() == 0


def test_a_post_without_the_rules_table_is_refused_not_read_as_no_rules(admin_client):
    scope = Scope.objects.create(name="kept", server_rules=[{"server": "/fx", "methods": ["*"]}])

    response = admin_client.post(f"/admin/accounts/scope/{scope.pk}/change/", {"description": "x"})

    assert response.status_code == 200
    assert errors(response) == ["The form arrived incomplete; reload the page and try again."]
    scope.refresh_from_db()
    assert scope.server_rules == [{"server": "/fx", "methods": ["*"]}]


def test_an_existing_rule_shows_as_its_row_and_saves_with_the_same_meaning(admin_client):
    rules = [{"server": "/legacy", "methods": "all", "tools": "*"}]
    scope = Scope.objects.create(name="kept", server_rules=rules)
    url = f"/admin/accounts/scope/{scope.pk}/change/"
    page = admin_client.get(url).content.decode()

    assert '<option value="/legacy" selected>/legacy (not registered)</option>' in page
    assert 'name="server_rules-0-methods" value="*" checked' in page
    assert 'name="server_rules-0-tools" value="*"' in page

    admin_client.post(
        url,
        form(
            name="kept",
            **{
                "server_rules-rows": "4",
                "server_rules-0-server": "/legacy",
                "server_rules-0-methods": ["*"],
                "server_rules-0-tools": "*",
            },
        ),
    )
    scope.refresh_from_db()
    assert scope.server_rules == [{"server": "/legacy", "methods": "*", "tools": "*"}]


def test_a_rule_offers_its_servers_known_tools_as_ticks_and_the_usual_method_sets(admin_client):
    from servers.models import Server

    fx = Server.objects.get(path="/fx")
    for name in ("convert_currency", "list_currencies"):
        fx.tools.create(name=name)
    scope = Scope.objects.create(
        name="fx-some",
        server_rules=[{"server": "/fx", "methods": ["tools/call"], "tools": ["convert_currency", "legacy"]}],
    )
    url = f"/admin/accounts/scope/{scope.pk}/change/"
    page = admin_client.get(url).content.decode()

    admin_client.post(
        url,
        form(
            name="fx-some",
            **{
                "server_rules-0-server": "/fx",
                "server_rules-0-preset": "call",
                "server_rules-0-tool_choices": ["list_currencies"],
                "server_rules-0-tools": "not_yet_discovered",
                "server_rules-1-server": "/weather",
                "server_rules-1-preset": "read",
            },
        ),
    )

    ticks = re.findall(r'name="server_rules-0-tool_choices" value="(\w+)"( checked)?', page)
    assert ticks == [("convert_currency", " checked"), ("list_currencies", "")]
    assert 'name="server_rules-0-tools" value="legacy"' in page  # an undiscovered tool stays typed
    assert (
        re.findall(r'<select name="server_rules-0-preset"[^>]*>(.*?)</select>', page)[0].count("<option") == 4
    )
    scope.refresh_from_db()
    read = [
        "initialize",
        "ping",
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
    ]
    assert scope.server_rules == [
        {
            "server": "/fx",
            "methods": [*read, "prompts/list", "prompts/get", "tools/call"],
            "tools": ["list_currencies", "not_yet_discovered"],
        },
        {"server": "/weather", "methods": [*read, "prompts/list", "prompts/get"]},
    ]
