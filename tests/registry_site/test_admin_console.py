"""The Django admin as the operator console: one Accounts section, no internals (embeddings), readable
health and metric rows, newest first, and a metrics page with plots."""

import re
import uuid
from datetime import timedelta

import pytest
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django.contrib.admin import AdminSite
from django.contrib.auth.models import Group
from django.utils import timezone

from accounts.choices import SYSTEM_GROUPS
from metrics.models import GenericMetric, ToolExecutionMetric
from registry_site.admin_site import unused_models_unregister
from servers.models import HealthTransition
from tests.factories import AgentFactory, ServerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.test", "pw"))
    return client


def text(response) -> str:
    return response.content.decode()


def sections(page: str) -> dict[str, list[str]]:
    """The index's sections and the models listed in each."""
    found = {}
    for caption, body in re.findall(
        r"<caption>\s*<a [^>]*>([^<]+)</a>\s*</caption>(.*?)</table>", page, re.S
    ):
        found[caption.strip()] = re.findall(r'<th scope="row"[^>]*>\s*<a [^>]*>([^<]+)</a>', body)
    return found


def test_the_system_groups_exist_from_the_first_start():
    assert set(SYSTEM_GROUPS) <= set(Group.objects.values_list("name", flat=True))


def test_the_index_has_one_accounts_section_and_no_unused_models(admin_client):
    found = sections(text(admin_client.get("/admin/")))

    assert "Groups" in found["Accounts"]
    assert {"Users", "Scopes", "Issued tokens", "Audit events"} <= set(found["Accounts"])
    assert "Authentication and Authorization" not in found
    assert "Social Accounts" not in found  # no identity provider is configured
    assert found["Metrics"][0] == "Plots: requests, errors and latency"


def test_social_accounts_stay_when_an_identity_provider_is_configured(settings):
    site = AdminSite()
    for model in (SocialAccount, SocialApp, SocialToken):
        site.register(model)
    settings.SOCIALACCOUNT_PROVIDERS = {"github": {"APPS": [{"client_id": "x", "secret": "y"}]}}

    unused_models_unregister(site)

    assert [site.is_registered(m) for m in (SocialAccount, SocialApp, SocialToken)] == [True, False, False]


def test_embeddings_are_never_shown(admin_client):
    server = ServerFactory(path="/fx")
    agent = AgentFactory(path="/poet")

    for url in (f"/admin/servers/server/{server.pk}/change/", f"/admin/agents/agent/{agent.pk}/change/"):
        page = text(admin_client.get(url))
        assert "embedding" not in page.lower(), url


def test_a_tool_shows_its_input_schema_first(admin_client):
    server = ServerFactory(path="/fx")
    tool = server.tools.create(name="convert", description="Convert money", input_schema={"type": "object"})

    page = text(admin_client.get(f"/admin/servers/tool/{tool.pk}/change/"))

    labels = re.findall(r'<div class="flex-container[^"]*">\s*<label[^>]*>([^<]+)</label>', page)
    assert labels[:2] == ["Input schema:", "Name:"]
    assert '<pre class="tool-schema">{\n  &quot;type&quot;: &quot;object&quot;\n}</pre>' in page
    assert "embedding" not in page.lower()


def test_health_transitions_are_listed_newest_first(admin_client):
    server = ServerFactory(path="/fx")
    now = timezone.now()
    for minutes, status in ((3, "healthy"), (2, "unhealthy"), (1, "healthy")):
        HealthTransition.objects.create(
            server=server, from_status="unknown", to_status=status, at=now - timedelta(minutes=minutes)
        )

    page = text(admin_client.get("/admin/servers/healthtransition/"))

    ids = re.findall(r"/admin/servers/healthtransition/(\d+)/change/", page)
    newest_first = HealthTransition.objects.order_by("-at").values_list("pk", flat=True)
    assert [int(pk) for pk in dict.fromkeys(ids)] == list(newest_first)


def test_health_check_rows_name_the_server_and_the_result_with_rounded_durations(admin_client):
    GenericMetric.objects.create(
        id=uuid.uuid4(),
        service="registry",
        timestamp=timezone.now(),
        value=1,
        duration_ms=123.4567,
        type="health_check",
        dimensions={"server": "/fx", "status": "unhealthy", "num_tools": 3},
    )

    page = text(admin_client.get("/admin/metrics/genericmetric/"))

    assert '<td class="field-server">/fx</td>' in page
    assert '<td class="field-result">unhealthy, 3 tools</td>' in page
    assert '<td class="field-duration">123.5 ms</td>' in page


def call(server: str, tool: str, *, ok: bool = True, ms: float = 10.0, ago: float = 5.0):
    ToolExecutionMetric.objects.create(
        id=uuid.uuid4(),
        service="registry",
        timestamp=timezone.now() - timedelta(minutes=ago),
        value=1,
        duration_ms=ms,
        dimensions={"server": server},
        method="tools/call",
        tool_name=tool,
        success=ok,
    )


def test_the_metrics_page_plots_calls_errors_and_latency_per_server_and_tool(admin_client):
    for ms in (10, 20, 30, 40):
        call("/fx", "convert", ms=ms)
    call("/fx", "convert", ok=False, ms=100, ago=50)
    call("/weather", "forecast", ms=5)
    call("/old", "ancient", ago=60 * 10)  # outside the 6 hours shown

    response = admin_client.get("/admin/metrics/plots/")

    assert response.status_code == 200
    page = text(response)
    rows = re.findall(
        r'<tr data-server="([^"]+)"><td><code>[^<]+</code></td><td class="num">(\d+)</td>'
        r'<td class="num">(\d+)</td><td class="num">(\d+) %</td><td class="num">([\d.]+) ms</td>',
        page,
    )
    assert rows == [("/fx", "5", "1", "20", "30.0"), ("/weather", "1", "0", "0", "5.0")]
    assert re.findall(
        r'<tr data-tool="([^"]+)"><td><code>[^<]+</code></td><td class="num">(\d+)</td>', page
    ) == [
        ("convert", "5"),
        ("forecast", "1"),
    ]
    assert page.count('<svg viewBox="0 0 480 140"') == 8  # traffic and latency of 2 servers and 2 tools
    assert 'aria-label="Requests and errors of /fx"' in page


def test_the_metrics_page_is_for_superusers(client, django_user_model):
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)

    assert client.get("/admin/metrics/plots/").status_code == 403


def test_the_metrics_page_says_when_the_registry_does_not_report_and_how_to_turn_it_on(
    admin_client, settings
):
    settings.METRICS_API_KEY = ""
    off = text(admin_client.get("/admin/metrics/plots/"))
    settings.METRICS_API_KEY = "a-key"
    on = text(admin_client.get("/admin/metrics/plots/"))

    assert "data-reporting-off" in off and "Set <code>METRICS_API_KEY_REGISTRY</code>" in off
    assert "No calls are counted: metrics reporting is off (above)." in off
    assert "data-reporting-off" not in on
    assert "No calls went through the gateway in this period." in on


def test_a_servers_system_fields_are_shown_never_offered_for_editing(client, member, scope_factory):
    scope_factory("ops", group="ops", ui={"list_service": ["weather"], "modify_service": ["weather"]})
    client.force_login(member("olga", "ops", is_staff=True))
    server = ServerFactory(path="/weather", name="Weather", tool_scanner_version="1.2.0")

    page = client.get(f"/admin/servers/server/{server.pk}/change/").content.decode()
    inputs = set(re.findall(r'<(?:input|select|textarea)[^>]* name="(\w+)"', page))

    assert {"name", "description", "proxy_pass_url"} <= inputs
    assert not {"tool_scanner_version", "tools_pinned_at", "prompts_pinned_at", "prompt_set_digest"} & inputs
    assert "1.2.0" in page  # shown, read only
