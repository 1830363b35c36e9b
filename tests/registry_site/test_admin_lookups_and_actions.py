"""The console's lists filter by the filters each admin declares and nothing else, and never by a secret:
Django would otherwise accept any lookup on a local field in the list URL, which reads a secret header a
character at a time (`?headers__X-Api-Key__startswith=…`). Every action of every model asks the same
policy as the pages: a staff member without the right is not offered it and, posting it anyway, changes
nothing."""

import pytest
from django.contrib import admin
from django.test import RequestFactory

from accounts.models import AuditEvent
from catalog.models import Upstream
from tests.factories import AgentFactory, ServerFactory, ToolFactory, stored_version

pytestmark = pytest.mark.django_db

SECRET = "k3y-abcdefghijklmnopqrstuv"


@pytest.fixture
def rows(db):
    alpha = ServerFactory(path="/alpha", headers={"X-Api-Key": SECRET})
    beta = ServerFactory(path="/beta", headers={"Authorization": "Bearer other"})
    ToolFactory(server=alpha, name="add")
    ToolFactory(server=beta, name="sub")
    AgentFactory()
    upstream = Upstream.objects.create(name="peer", url="https://peer.example.test", auth_header="Bearer up")
    stored_version("com.acme/maps", upstream=upstream, description="Maps")
    return alpha, beta


@pytest.fixture
def alpha_reader(client, member, scope_factory):
    """Staff whose scope names only /alpha, to read (no change, toggle or delete anywhere)."""
    scope_factory("alpha-readers", group="alpha-readers", ui={"list_service": ["/alpha"]})
    client.force_login(member("rita", "alpha-readers", is_staff=True))
    return client


SECRET_LOOKUPS = [
    f"headers__X-Api-Key__startswith={SECRET[:3]}",
    "headers__icontains=k3y",
    "headers__has_key=X-Api-Key",
    "headers__X-Api-Key=" + SECRET,
    "headers__contains={}",
    "headers__isnull=False",
]
UNDECLARED_LOOKUPS = [
    "path__startswith=/a",
    "health_detail__icontains=x",
    "id__gt=0",
    "proxy_pass_url__regex=.",
]


@pytest.mark.parametrize("query", SECRET_LOOKUPS + UNDECLARED_LOOKUPS)
@pytest.mark.parametrize("who", ["staff", "administrator"])
def test_a_server_list_refuses_lookups_it_does_not_declare(rows, alpha_reader, admin_client, query, who):
    caller = alpha_reader if who == "staff" else admin_client

    answer = caller.get(f"/admin/servers/server/?{query}")

    assert answer.status_code == 400
    assert SECRET not in answer.content.decode()


@pytest.mark.parametrize(
    "url",
    [
        "/admin/servers/tool/?server__headers__icontains=k3y",
        "/admin/servers/tool/?server__proxy_pass_url__startswith=http",
        "/admin/catalog/upstream/?auth_header__startswith=Bearer",
        "/admin/catalog/serverversion/?upstream__auth_header__startswith=Bearer",
    ],
)
def test_related_and_other_secrets_are_refused_too(rows, admin_client, url):
    assert admin_client.get(url).status_code == 400


def test_the_declared_filters_still_filter(rows, admin_client):
    disabled = admin_client.get("/admin/servers/server/?is_enabled__exact=1")
    by_upstream = admin_client.get(
        f"/admin/catalog/serverversion/?upstream__id__exact={Upstream.objects.get().pk}"
    )

    assert disabled.status_code == 200 and len(disabled.context["cl"].result_list) == 2
    assert by_upstream.status_code == 200 and len(by_upstream.context["cl"].result_list) == 1


def _request_as(user):
    from django.contrib.sessions.backends.db import SessionStore

    request = RequestFactory().get("/admin/")
    request.user, request.session = user, SessionStore()
    return request


def test_no_model_of_the_console_lets_a_secret_be_filtered_searched_or_sorted(admin_user):
    request = _request_as(admin_user)
    checked = 0
    for model, model_admin in admin.site._registry.items():
        secrets = set(getattr(model, "SECRET_FIELDS", ()))
        declared = {item if isinstance(item, str) else "" for item in model_admin.get_list_filter(request)}
        searched = {name.lstrip("^=@").split("__")[0] for name in model_admin.get_search_fields(request)}
        shown = set(model_admin.get_list_display(request)) | set(model_admin.get_sortable_by(request))
        assert not secrets & (declared | searched | shown), model
        for name in secrets:
            assert not model_admin.lookup_allowed(f"{name}__startswith", "a", request)
            assert not model_admin.lookup_allowed(name, "a", request)
            checked += 1
    assert (
        checked == 7
    )  # servers' and agents' headers, upstreams' auth header, credential and metrics key hashes, users'
    # upstream credentials, the registry's client secrets at upstream authorization servers


def _snapshot() -> dict:
    return {model._meta.label: list(model.objects.order_by("pk").values()) for model in admin.site._registry}


def test_every_action_of_every_model_is_refused_to_staff_without_the_right(rows, alpha_reader, admin_user):
    from accounts.models import User

    staff = User.objects.get(username="rita")
    everything = [
        (model, name)
        for model, model_admin in admin.site._registry.items()
        for name in model_admin.get_actions(_request_as(admin_user))
    ]
    before, events = _snapshot(), AuditEvent.objects.count()

    offered = []
    for model, name in everything:
        model_admin = admin.site._registry[model]
        if name in model_admin.get_actions(_request_as(staff)):
            offered.append((model._meta.label, name))
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        alpha_reader.post(
            url, {"action": name, "_selected_action": list(model.objects.values_list("pk", flat=True))}
        )

    assert len(everything) >= 10
    # Offered where the model's rule lets some staff act on some row (agents: their owners), never here:
    assert [label for label, _ in offered if not label.startswith("agents.")] == []
    assert _snapshot() == before
    assert AuditEvent.objects.count() == events


def test_an_action_runs_only_on_the_rows_the_caller_may_change(rows, client, member, scope_factory):
    alpha, beta = rows
    scope_factory("alpha-ops", group="alpha-ops", ui={"list_service": ["all"], "toggle_service": ["/alpha"]})
    client.force_login(member("otto", "alpha-ops", is_staff=True))

    client.post(
        "/admin/servers/server/", {"action": "disable_selected", "_selected_action": [alpha.pk, beta.pk]}
    )

    alpha.refresh_from_db()
    beta.refresh_from_db()
    assert (alpha.is_enabled, beta.is_enabled) == (False, True)
