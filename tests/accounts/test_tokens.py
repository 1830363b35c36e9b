"""Registry-issued tokens: generation limited to the caller's scopes, service-account tokens, and every
way a token can be refused."""

import base64
from datetime import timedelta

import jwt
import pytest
from django.core.management import call_command

from accounts.models import AuditEvent, IssuedToken
from accounts.services import client_credential_revoke, token_revoke
from accounts.tokens import encode
from tests.factories import ServerFactory, UserFactory

pytestmark = pytest.mark.django_db


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def dev(member, scope_factory):
    scope_factory("servers-read", group="devs", ui={"list_service": ["one"]})
    scope_factory("servers-write", group="devs", ui={"modify_service": ["one"]})
    return member("dana", "devs")


def generate(client, body=None, **headers):
    return client.post("/api/tokens/generate", body or {}, content_type="application/json", headers=headers)


def test_a_session_user_gets_a_token_with_all_their_scopes(client, dev, settings):
    client.force_login(dev)

    response = generate(client, {"description": "laptop"})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert (body["token_type"], body["expires_in"], body["refresh_token"], body["scope"]) == (
        "Bearer",
        8 * 3600,
        None,
        "servers-read servers-write",
    )
    claims = jwt.decode(
        body["access_token"], settings.JWT_SIGNING_KEY, algorithms=["HS256"], issuer="mcp-gateway-registry"
    )
    assert claims["sub"] == "dana"
    assert claims["scope"] == "servers-read servers-write"
    assert claims["groups"] == ["devs"]
    assert len(claims["jti"]) == 32
    assert claims["exp"] - claims["iat"] == 8 * 3600
    assert IssuedToken.objects.get().jti == claims["jti"]
    assert response["X-RateLimit-Limit"] == "10"
    assert response["X-RateLimit-Remaining"] == "9"
    assert response["Cache-Control"] == "no-store"
    assert AuditEvent.objects.get().action == "token.issue"


def test_requested_scopes_narrow_the_token(client, dev):
    client.force_login(dev)

    token = generate(client, {"requested_scopes": ["servers-read"], "expires_in_hours": 1}).json()
    me = client.get("/api/auth/me", headers=bearer(token["access_token"])).json()

    assert token["scope"] == "servers-read"
    assert token["expires_in"] == 3600
    assert me["scopes"] == ["servers-read"]
    assert me["auth_method"] == "jwt"


def test_scopes_beyond_the_callers_are_refused_and_nothing_is_issued(client, dev, scope_factory):
    scope_factory("admin-things", group="admins-only")
    client.force_login(dev)

    response = generate(client, {"requested_scopes": ["servers-read", "admin-things"]})

    assert response.status_code == 403
    assert response.json()["detail"] == "Scopes not granted to the caller: admin-things."
    assert response.json()["error_code"] == "permission_denied"
    assert IssuedToken.objects.count() == 0
    assert AuditEvent.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in_hours": 25}, "expires_in_hours"),
        ({"expires_in_hours": 0}, "expires_in_hours"),
        ({"expires_in_hours": "soon"}, "expires_in_hours"),
        ({"requested_scopes": "servers-read"}, "requested_scopes"),
        ({"requested_scopes": []}, "requested_scopes"),
    ],
)
def test_bad_token_requests_are_400_with_the_field(client, dev, body, field):
    client.force_login(dev)

    response = generate(client, body)

    assert response.status_code == 400
    assert response.json()["error_code"] == "validation_error"
    assert list(response.json()["errors"]) == [field]
    assert IssuedToken.objects.count() == 0


def test_a_bearer_caller_can_mint_a_narrower_token_but_not_a_wider_one(client, dev):
    client.force_login(dev)
    narrow = generate(client, {"requested_scopes": ["servers-read"]}).json()["access_token"]
    client.logout()

    narrower = generate(client, {"requested_scopes": ["servers-read"]}, **bearer(narrow))
    wider = generate(client, {"requested_scopes": ["servers-write"]}, **bearer(narrow))

    assert narrower.status_code == 200
    assert wider.status_code == 403


def test_token_issuing_is_rate_limited_per_user(client, dev, settings):
    settings.TOKEN_ISSUE_RATE_PER_MINUTE = 2
    client.force_login(dev)
    generate(client)
    generate(client)

    response = generate(client)

    assert response.status_code == 429
    assert response.json()["error_code"] == "throttled"
    assert response["X-RateLimit-Remaining"] == "0"
    assert int(response["Retry-After"]) >= 1
    assert IssuedToken.objects.count() == 2


def test_generating_needs_a_caller(client):
    response = generate(client)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="mcp-gateway-registry"'


def test_session_posts_need_the_csrf_token(dev):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(dev)

    response = client.post("/api/tokens/generate", {}, format="json")

    assert response.status_code == 403
    assert IssuedToken.objects.count() == 0


def token_for(user, *, lifetime=timedelta(hours=1), key=None, record=True, scopes=()):
    encoded = encode(
        username=user.username, scopes=scopes, groups=[], admin=False, lifetime=lifetime, kind="user"
    )
    if record:
        IssuedToken.objects.create(
            jti=encoded.jti, user=user, kind="user", expires_at=encoded.expires_at, scopes=list(scopes)
        )
    if key is None:
        return encoded.token
    claims = jwt.decode(encoded.token, options={"verify_signature": False})
    return jwt.encode(claims, key, algorithm="HS256")


@pytest.mark.parametrize(
    ("make_token", "code", "detail"),
    [
        (lambda u: token_for(u, lifetime=timedelta(seconds=-5)), "token_expired", "The token has expired."),
        (lambda u: "not-a-jwt", "token_malformed", "The token is malformed."),
        (lambda u: token_for(u, key="someone-elses-key-" * 3), "token_invalid", "The token is invalid."),
        (lambda u: token_for(u, record=False), "token_revoked", "The token has been revoked."),
    ],
)
def test_bad_tokens_are_401_with_a_reason(client, dev, make_token, code, detail):
    response = client.get("/api/auth/me", headers=bearer(make_token(dev)))

    assert response.status_code == 401
    assert response.json()["error_code"] == code
    assert response.json()["detail"] == detail
    assert response["WWW-Authenticate"] == 'Bearer realm="mcp-gateway-registry"'


def test_a_revoked_token_stops_working(client, dev):
    raw = token_for(dev)
    before = client.get("/api/auth/me", headers=bearer(raw)).status_code

    token_revoke(actor=None, token=IssuedToken.objects.get())
    after = client.get("/api/auth/me", headers=bearer(raw))

    assert before == 200
    assert after.status_code == 401
    assert after.json()["error_code"] == "token_revoked"


def test_only_an_admin_token_asked_for_explicitly_administers(client, member, scope_factory):
    scope_factory("one-server", group="mcp-registry-admin", ui={"list_service": ["one"]})
    admin = member("ada", "mcp-registry-admin")
    client.force_login(admin)

    full = generate(client, {"admin": True}).json()["access_token"]
    default = generate(client).json()["access_token"]
    narrow = generate(client, {"requested_scopes": ["one-server"]}).json()["access_token"]
    client.logout()

    assert client.get("/api/auth/me", headers=bearer(full)).json()["is_admin"] is True
    assert client.get("/api/auth/me", headers=bearer(default)).json()["is_admin"] is False
    assert client.get("/api/auth/me", headers=bearer(narrow)).json()["is_admin"] is False
    assert client.get("/api/admin/tokens", headers=bearer(default)).status_code == 403


def test_spoofed_identity_headers_gain_nothing(client):
    response = client.get(
        "/api/auth/me", headers={"X-User": "admin", "X-Username": "admin", "X-Scopes": "mcp-registry-admin"}
    )

    assert response.status_code == 401


# -- service accounts ---------------------------------------------------------------------------------


@pytest.fixture
def robot(scope_factory, capsys):
    scope_factory("robot-scope", group="robots", ui={"list_service": ["all"]})
    call_command("create_service_account", "robot", "--groups", "robots")
    out = capsys.readouterr().out.split()
    return dict(line.split("=", 1) for line in out)


def test_client_credentials_give_a_five_minute_token_with_the_accounts_scopes(client, robot):
    response = client.post(
        "/api/auth/token",
        {
            "grant_type": "client_credentials",
            "client_id": robot["client_id"],
            "client_secret": robot["client_secret"],
        },
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["expires_in"], body["scope"], body["token_type"]) == (300, "robot-scope", "Bearer")
    me = client.get("/api/auth/me", headers=bearer(body["access_token"])).json()
    assert (me["username"], me["scopes"], me["groups"]) == ("robot", ["robot-scope"], ["robots"])


def test_client_credentials_also_work_with_basic_client_authentication(client, robot):
    basic = base64.b64encode(f"{robot['client_id']}:{robot['client_secret']}".encode()).decode()

    response = client.post(
        "/api/auth/token", {"grant_type": "client_credentials"}, headers={"Authorization": f"Basic {basic}"}
    )

    assert response.status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"grant_type": "client_credentials", "client_id": "robot-x", "client_secret": "nope"},
            401,
            "invalid_client",
        ),
        ({"grant_type": "client_credentials"}, 401, "invalid_client"),
        ({"grant_type": "password", "client_id": "a", "client_secret": "b"}, 400, "unsupported_grant_type"),
        ({}, 400, "validation_error"),
    ],
)
def test_bad_client_credential_requests(client, robot, body, status, code):
    response = client.post("/api/auth/token", body)

    assert response.status_code == status
    assert response.json()["error_code"] == code
    assert IssuedToken.objects.count() == 0


def test_a_wrong_secret_for_a_real_client_is_refused(client, robot):
    response = client.post(
        "/api/auth/token",
        {"grant_type": "client_credentials", "client_id": robot["client_id"], "client_secret": "guess"},
    )

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Basic")


def test_a_revoked_credential_is_refused(client, robot):
    from accounts.models import ClientCredential

    client_credential_revoke(actor=None, credential=ClientCredential.objects.get())

    response = client.post(
        "/api/auth/token",
        {
            "grant_type": "client_credentials",
            "client_id": robot["client_id"],
            "client_secret": robot["client_secret"],
        },
    )

    assert response.status_code == 401


def test_the_admin_token_endpoint(client, member, robot, settings):
    admin = member("ada", "mcp-registry-admin")
    user = member("ulf")
    settings.REGISTRY_SERVICE_ACCOUNT = ""
    client.force_login(user)
    forbidden = client.get("/api/admin/tokens")
    client.force_login(admin)
    unconfigured = client.get("/api/admin/tokens")
    settings.REGISTRY_SERVICE_ACCOUNT = "robot"
    configured = client.get("/api/admin/tokens")

    assert forbidden.status_code == 403
    assert forbidden.json()["error_code"] == "permission_denied"
    assert unconfigured.status_code == 503
    assert unconfigured.json()["error_code"] == "service_account_not_configured"
    assert "REGISTRY_SERVICE_ACCOUNT" in unconfigured.json()["detail"]
    assert configured.status_code == 200
    assert configured.json()["expires_in"] == 300
    assert configured.json()["scope"] == "robot-scope"


def test_a_scope_limited_token_sees_only_what_the_scope_allows(client, member, scope_factory):
    for path in ("/one", "/two", "/three"):
        ServerFactory(path=path)
    scope_factory(
        "just-one", group="mcp-registry-admin", server_rules=[{"server": "one", "methods": "*", "tools": "*"}]
    )
    admin = member("ada", "mcp-registry-admin")
    client.force_login(admin)
    raw = generate(client, {"requested_scopes": ["just-one"]}).json()["access_token"]
    client.logout()

    from accounts.authentication import principal_from_bearer
    from servers.models import Server

    visible = list(Server.objects.visible_to(principal_from_bearer(raw)).values_list("path", flat=True))

    assert visible == ["/one"]


# -- tokens cannot outlive or outgrow what issued them ------------------------------------------------


def _service_token(client, robot) -> str:
    form = {"grant_type": "client_credentials", **{k: robot[k] for k in ("client_id", "client_secret")}}
    return client.post("/api/auth/token", form).json()["access_token"]


def test_a_service_token_cannot_mint_tokens(client, robot):
    service = _service_token(client, robot)

    response = client.post(
        "/api/tokens/generate",
        {"expires_in_hours": 24},
        content_type="application/json",
        headers=bearer(service),
    )

    assert response.status_code == 403
    assert response.json()["error_code"] == "permission_denied"
    assert IssuedToken.objects.filter(kind="user").count() == 0


def test_a_service_token_stops_working_when_its_credential_is_revoked(client, robot):
    from accounts.models import ClientCredential

    service = _service_token(client, robot)
    assert client.get("/api/auth/me", headers=bearer(service)).status_code == 200

    client_credential_revoke(
        actor=None, credential=ClientCredential.objects.get(client_id=robot["client_id"])
    )
    response = client.get("/api/auth/me", headers=bearer(service))

    assert response.status_code == 401
    assert response.json()["error_code"] == "token_revoked"


def test_a_token_minted_by_a_token_ends_with_it_and_is_revoked_with_it(client, token_for):
    parent = token_for(UserFactory(username="ann"))  # one hour
    minted = client.post(
        "/api/tokens/generate",
        {"expires_in_hours": 24},
        content_type="application/json",
        headers=bearer(parent),
    )
    grandchild = client.post(
        "/api/tokens/generate",
        {"expires_in_hours": 24},
        content_type="application/json",
        headers=bearer(minted.json()["access_token"]),
    )

    assert minted.status_code == 200
    assert 3540 <= minted.json()["expires_in"] <= 3600
    assert grandchild.json()["expires_in"] <= minted.json()["expires_in"]
    child_record = IssuedToken.objects.get(parent__isnull=False, children__isnull=False)
    assert child_record.expires_at <= child_record.parent.expires_at

    token_revoke(actor=None, token=child_record.parent)

    for token in (parent, minted.json()["access_token"], grandchild.json()["access_token"]):
        answer = client.get("/api/auth/me", headers=bearer(token))
        assert (answer.status_code, answer.json()["error_code"]) == (401, "token_revoked")
