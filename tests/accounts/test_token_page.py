"""The token page (/api/tokens): issue a token shown once with what it grants and a client
configuration, and list and revoke the caller's own tokens."""

import json
import re

import jwt
import pytest
from django.test import Client

from accounts.models import AuditEvent, IssuedToken
from tests.factories import ServerFactory
from tests.servers.test_dashboard import csrf_client, flashes, html

pytestmark = pytest.mark.django_db
PAGE = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"  # a browser's form post


@pytest.fixture
def weather(db):
    return ServerFactory(path="/weather", name="Weather", proxy_pass_url="http://127.0.0.1:9002/v1/mcp")


@pytest.fixture
def dev(member, scope_factory):
    scope_factory("servers-read", group="devs", ui={"list_service": ["weather"]})
    scope_factory("servers-write", group="devs", ui={"modify_service": ["weather"]})
    return member("dana", "devs")


def test_the_token_page_lists_the_callers_scopes_as_checkboxes(client, dev, scope_factory):
    scope_factory("not-mine", group="others")
    client.force_login(dev)

    page = html(client.get("/api/tokens"))

    assert re.findall(r'name="requested_scopes" value="([^"]+)"', page) == ["servers-read", "servers-write"]
    assert 'name="csrfmiddlewaretoken"' in page
    lifetimes = re.findall(r'<option value="(\d+)"( selected)?>([^<]+)</option>', page)
    assert lifetimes == [
        ("1", "", "1 hour"),
        ("4", "", "4 hours"),
        ("8", " selected", "8 hours"),
        ("24", "", "1 day"),
    ]


def test_the_token_form_issues_a_token_shown_once(client, dev, settings):
    client.force_login(dev)

    response = client.post(
        "/api/tokens", {"scope_mode": "all", "expires_in_hours": "2", "description": "laptop"}, follow=True
    )

    assert response.redirect_chain == [("/api/tokens", 303)]
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    token = re.search(
        r'<textarea id="new-token" class="token"[^>]*>([^<]+)</textarea>', html(response)
    ).group(1)
    claims = jwt.decode(token, settings.JWT_SIGNING_KEY, algorithms=["HS256"], issuer="mcp-gateway-registry")
    assert (claims["sub"], claims["scope"], claims["exp"] - claims["iat"]) == (
        "dana",
        "servers-read servers-write",
        2 * 3600,
    )
    assert "<dd data-lifetime>2 hours</dd>" in html(response)
    assert (
        "<dd data-granted>can do what <code>servers-read</code>, <code>servers-write</code> allow; "
        "cannot administer</dd>"
    ) in html(response)
    assert IssuedToken.objects.get().description == "laptop"
    assert token not in html(client.get("/api/tokens"))  # a reload shows it no more, and makes none
    assert IssuedToken.objects.count() == 1


def test_ticked_scopes_narrow_the_token(client, dev):
    client.force_login(dev)

    response = client.post(
        "/api/tokens", {"scope_mode": "scopes", "requested_scopes": ["servers-read"]}, follow=True
    )

    assert IssuedToken.objects.get().scopes == ["servers-read"]
    assert "<dd data-granted>can do what <code>servers-read</code> allow; cannot administer</dd>" in html(
        response
    )


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"scope_mode": "scopes"}, 400, "Choose at least one scope."),
        (
            {"scope_mode": "scopes", "requested_scopes": ["not-mine"]},
            403,
            "Scopes not granted to the caller: not-mine.",
        ),
        ({"scope_mode": "all", "expires_in_hours": "99"}, 400, "Expires in hours: At most 24 hours."),
        ({}, 400, "Choose what the token may do."),
        ({"scope_mode": "admin"}, 403, "Only administrators can make a token that administers."),
    ],
)
def test_refused_token_requests_come_back_with_the_reason(client, dev, form, status, message):
    client.force_login(dev)

    response = client.post("/api/tokens", form)

    assert response.status_code == status
    assert f'<p class="error" role="alert">{message}</p>' in html(response)
    assert IssuedToken.objects.count() == 0


def test_the_token_form_shares_the_rate_limit_of_the_json_endpoint(client, dev, settings):
    settings.TOKEN_ISSUE_RATE_PER_MINUTE = 1
    client.force_login(dev)
    client.post("/api/tokens/generate", {}, content_type="application/json")

    response = client.post("/api/tokens", {"scope_mode": "all"})

    assert response.status_code == 429
    assert "Too many tokens requested; try again later." in html(response)
    assert IssuedToken.objects.count() == 1


def test_the_token_form_enforces_csrf(dev):
    client, token = csrf_client(dev)

    refused = client.post("/api/tokens", {"scope_mode": "all"})
    accepted = client.post("/api/tokens", {"scope_mode": "all", "csrfmiddlewaretoken": token})

    assert (refused.status_code, accepted.status_code) == (403, 303)
    assert IssuedToken.objects.count() == 1


def test_a_new_token_comes_with_a_client_configuration_for_the_gateway(client, dev, weather):
    client.force_login(dev)

    response = client.post("/api/tokens", {"scope_mode": "all"}, follow=True)

    page = html(response)
    token = re.search(r'<textarea id="new-token" class="token"[^>]*>([^<]+)</textarea>', page).group(1)
    config = re.search(r'aria-label="MCP client configuration">([^<]+)</textarea>', page).group(1)
    assert json.loads(config.replace("&quot;", '"')) == {
        "mcpServers": {
            "weather": {
                "type": "http",
                "url": "http://testserver/weather/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
            }
        }
    }


def test_an_administrator_gets_a_token_that_administers_only_by_choosing_it(client, member):
    client.force_login(member("root", "mcp-registry-admin"))

    page = html(client.get("/api/tokens"))
    everything = html(client.post("/api/tokens", {"scope_mode": "all"}, follow=True))
    admin = html(client.post("/api/tokens", {"scope_mode": "admin", "expires_in_hours": "24"}, follow=True))

    assert re.findall(r'name="scope_mode" value="(\w+)"[^>]*?( checked)?>', page) == [
        ("all", " checked"),
        ("admin", ""),
    ]
    assert granted(everything) == (
        "can call every tool you may call on every server you may reach; cannot administer"
    )
    assert granted(admin) == "can do everything, including administering the registry"
    assert "<dd data-lifetime>1 day</dd>" in admin
    assert sorted(IssuedToken.objects.values_list("is_admin", flat=True)) == [False, True]


def granted(page: str) -> str:
    return re.search(r"<dd data-granted>(.*?)</dd>", page).group(1)


@pytest.fixture
def clock(db):
    server = ServerFactory(path="/clock", name="Clock", proxy_pass_url="http://127.0.0.1:9003/mcp")
    for name in ("add", "current_time", "echo"):
        server.tools.create(name=name)
    return server


def test_a_server_link_makes_the_narrowest_token_the_default_even_for_an_administrator(client, member, clock):
    client.force_login(member("root", "mcp-registry-admin"))

    page = html(client.get("/api/tokens?server=/clock"))
    issued = client.post(
        "/api/tokens?server=/clock", {"scope_mode": "server", "tools": ["add", "current_time"]}, follow=True
    )

    assert re.findall(r'name="scope_mode" value="(\w+)"[^>]*?( checked)?>', page)[0] == ("server", " checked")
    assert re.findall(r'name="tools" value="([^"]+)" data-tool checked', page) == [
        "add",
        "current_time",
        "echo",
    ]
    assert (
        "This token can call <code>add</code>, <code>current_time</code>, <code>echo</code> on /clock; "
        "cannot administer."
    ) in page
    assert issued.redirect_chain == [("/api/tokens?server=%2Fclock", 303)]
    assert (
        granted(html(issued))
        == "can call <code>add</code>, <code>current_time</code> on /clock; cannot administer"
    )
    token = IssuedToken.objects.get()
    assert (token.is_admin, token.reach) == (
        False,
        {"server": "/clock", "tools": ["add", "current_time"], "all": True},
    )
    config = re.search(r'aria-label="MCP client configuration">([^<]+)</textarea>', html(issued)).group(1)
    assert list(json.loads(config.replace("&quot;", '"'))["mcpServers"]) == ["clock"]


def test_a_server_token_needs_a_ticked_tool(client, member, clock):
    client.force_login(member("root", "mcp-registry-admin"))

    response = client.post("/api/tokens?server=/clock", {"scope_mode": "server"})

    assert response.status_code == 400
    assert '<p class="error" role="alert">Tick at least one tool, or choose another option.</p>' in html(
        response
    )
    assert "This token can call no tool yet: tick at least one." in html(response)
    assert "This token ." not in html(response)
    assert IssuedToken.objects.count() == 0


@pytest.mark.parametrize(
    "asked, notice",
    [
        ("/nowhere", "No server you can see is at /nowhere. Choose one below."),
        ("/off", "/off is disabled: a token for it reaches nothing now. Choose another server below."),
        (
            "/team",
            "/team is a virtual server, and a token for one server names one of the servers behind it. "
            "Choose “Everything I may do” to reach /team, or one of its servers below.",
        ),
    ],
)
def test_a_link_naming_no_server_the_caller_can_use_says_so(client, member, clock, asked, notice):
    from virtual_servers.services import virtual_server_create

    ServerFactory(path="/off", name="Off", is_enabled=False)
    virtual_server_create(
        actor=None, path="/team", definition={"name": "Team", "members": [{"server": "/clock"}]}
    )
    client.force_login(member("root", "mcp-registry-admin"))

    page = html(client.get(f"/api/tokens?server={asked}"))

    assert (
        re.search(r"<p class=\"notice\" role=\"status\" data-server-notice>(.*?)</p>", page).group(1)
        == notice
    )
    assert (
        'data-current="/clock"' in page
    )  # the first server the caller can use is offered, not chosen silently


def test_my_tokens_lists_the_tokens_in_force_newest_first(client, dev, member):
    client.force_login(dev)
    client.post("/api/tokens", {"scope_mode": "all", "description": "laptop"})
    client.post(
        "/api/tokens", {"scope_mode": "scopes", "requested_scopes": ["servers-read"], "description": "ci"}
    )
    revoked = client.post("/api/tokens", {"scope_mode": "all", "description": "old"})
    assert revoked.status_code == 303
    old = IssuedToken.objects.get(description="old")
    client.post(f"/api/tokens/{old.jti}/revoke", {"confirm": "yes"})
    other = Client()
    other.force_login(member("eve", "devs"))
    other.post("/api/tokens", {"scope_mode": "all", "description": "eve's"})

    page = html(client.get("/api/tokens"))

    rows = re.findall(
        r'<tr data-token="[^"]+">\s*<td data-label="For">([^<]*)</td>\s*<td data-label="Grants">(.*?)</td>',
        page,
    )
    assert rows == [
        ("ci", "can do what <code>servers-read</code> allow; cannot administer"),
        (
            "laptop",
            "can do what <code>servers-read</code>, <code>servers-write</code> allow; cannot administer",
        ),
    ]


def test_revoking_a_token_stops_it_at_once(client, dev):
    client.force_login(dev)
    page = html(client.post("/api/tokens", {"scope_mode": "all", "description": "laptop"}, follow=True))
    token = re.search(r'<textarea id="new-token" class="token"[^>]*>([^<]+)</textarea>', page).group(1)
    assert Client().get("/api/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    issued = IssuedToken.objects.get()

    asked = client.post(f"/api/tokens/{issued.jti}/revoke", HTTP_ACCEPT=PAGE)
    still = Client().get("/api/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code
    response = client.post(f"/api/tokens/{issued.jti}/revoke", {"confirm": "yes"})

    assert (asked.status_code, still) == (200, 200)  # the first post only asks
    assert "<h1>Revoke the token laptop?</h1>" in html(asked)
    assert '<input type="hidden" name="confirm" value="yes">' in html(asked)
    assert (response.status_code, response["Location"]) == (303, "/api/tokens")
    assert flashes(client.get("/api/tokens")) == ["Token laptop revoked."]
    assert Client().get("/api/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    issued.refresh_from_db()
    assert issued.revoked_at is not None
    assert AuditEvent.objects.filter(action="token.revoke").count() == 1


def test_an_unconfirmed_post_from_a_script_is_an_error_and_revokes_nothing(client, dev):
    client.force_login(dev)
    client.post("/api/tokens", {"scope_mode": "all", "description": "laptop"})
    issued = IssuedToken.objects.get()

    for accept in ("*/*", "application/json", None):
        headers = {"HTTP_ACCEPT": accept} if accept else {}
        response = client.post(f"/api/tokens/{issued.jti}/revoke", **headers)

        assert response.status_code == 400
        assert response.json()["error_code"] == "confirmation_required"
        assert response.json()["detail"] == (
            "Nothing was revoked: this form asks first (confirm=yes). "
            f"Scripts revoke a token with DELETE /api/tokens/{issued.jti}."
        )
    issued.refresh_from_db()
    assert issued.revoked_at is None


def test_delete_revokes_a_token_for_its_holder_with_a_bearer_token(client, dev):
    client.force_login(dev)
    client.post("/api/tokens", {"scope_mode": "all", "description": "laptop"})
    client.post("/api/tokens", {"scope_mode": "all", "description": "script"})
    laptop, script = IssuedToken.objects.order_by("pk")
    bearer = re.search(
        r'<textarea id="new-token" class="token"[^>]*>([^<]+)</textarea>', html(client.get("/api/tokens"))
    ).group(1)
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {bearer}")

    response = caller.delete(f"/api/tokens/{laptop.jti}")
    again = caller.delete(f"/api/tokens/{laptop.jti}")

    laptop.refresh_from_db()
    assert response.status_code == 200
    assert response.json() == {
        "jti": laptop.jti,
        "revoked_at": laptop.revoked_at.isoformat().replace("+00:00", "Z"),
    }
    assert response["Cache-Control"] == "no-store"
    assert (again.status_code, again.json()) == (200, response.json())
    assert AuditEvent.objects.filter(action="token.revoke", target=f"token:{laptop.jti}").count() == 1
    script.refresh_from_db()
    assert script.revoked_at is None


def test_delete_of_someone_elses_token_is_404_but_an_administrator_revokes_it(client, dev, member):
    owner = Client()
    owner.force_login(member("eve", "devs"))
    owner.post("/api/tokens", {"scope_mode": "all"})
    theirs = IssuedToken.objects.get()
    client.force_login(dev)
    admin = Client()
    admin.force_login(member("ada", is_superuser=True, is_staff=True))

    refused = client.delete(f"/api/tokens/{theirs.jti}")
    missing = client.delete("/api/tokens/no-such-jti")
    anonymous = Client().delete(f"/api/tokens/{theirs.jti}")
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    revoked = admin.delete(f"/api/tokens/{theirs.jti}")

    assert (refused.status_code, refused.json()["detail"]) == (404, "No such token.")
    assert (missing.status_code, missing.json()["error_code"]) == (404, "not_found")
    assert anonymous.status_code == 401
    assert revoked.status_code == 200
    theirs.refresh_from_db()
    assert theirs.revoked_at is not None


def test_nobody_revokes_someone_elses_token(client, dev, member):
    owner = Client()
    owner.force_login(member("eve", "devs"))
    owner.post("/api/tokens", {"scope_mode": "all"})
    theirs = IssuedToken.objects.get()
    client.force_login(dev)

    response = client.post(f"/api/tokens/{theirs.jti}/revoke", {"confirm": "yes"})

    assert response.status_code == 404
    assert '<p class="error" role="alert">You have no such token.</p>' in html(response)
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_revoking_needs_the_pages_csrf_token(dev):
    client, csrf = csrf_client(dev)
    client.post("/api/tokens", {"scope_mode": "all", "csrfmiddlewaretoken": csrf})
    issued = IssuedToken.objects.get()

    refused = client.post(f"/api/tokens/{issued.jti}/revoke", {"confirm": "yes"})
    accepted = client.post(
        f"/api/tokens/{issued.jti}/revoke", {"csrfmiddlewaretoken": csrf, "confirm": "yes"}
    )

    assert (refused.status_code, accepted.status_code) == (403, 303)
