"""Trusted identity providers managed through the API and the internal API, by the model's one rule:
added, read, replaced and removed, each write audited; bad settings refused by field with nothing
stored; only administrators."""

import base64
import json

import pytest

from accounts.models import AuditEvent
from oauth.models import TrustedIssuer

pytestmark = pytest.mark.django_db

CORP = {"issuer": "https://corp.okta.example", "jwks_url": "https://corp.okta.example/oauth2/v1/keys"}


@pytest.fixture
def ops(client, settings):
    settings.ADMIN_USER, settings.ADMIN_PASSWORD = "ops", "an internal secret"
    basic = {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(b"ops:an internal secret").decode()}

    def call(method, path, body=None):
        data = json.dumps(body) if body is not None else None
        return getattr(client, method)(path, data=data, content_type="application/json", **basic)

    return call


def test_the_internal_api_adds_reads_replaces_and_removes_an_issuer_each_audited(ops):
    added = ops(
        "post", "/api/internal/trusted-issuers", {**CORP, "algorithms": ["RS256"], "user_claim": "email"}
    )
    issuer_id = added.json()["id"]
    listed = ops("get", "/api/internal/trusted-issuers")
    replaced = ops("put", f"/api/internal/trusted-issuers/{issuer_id}", {**CORP, "is_enabled": False})
    removed = ops("delete", f"/api/internal/trusted-issuers/{issuer_id}")
    gone = ops("get", f"/api/internal/trusted-issuers/{issuer_id}")

    assert added.status_code == 201
    assert {key: added.json()[key] for key in ("issuer", "algorithms", "user_claim", "is_enabled")} == {
        "issuer": "https://corp.okta.example",
        "algorithms": ["RS256"],
        "user_claim": "email",
        "is_enabled": True,
    }
    assert [entry["issuer"] for entry in listed.json()["issuers"]] == ["https://corp.okta.example"]
    assert (replaced.status_code, replaced.json()["is_enabled"], replaced.json()["user_claim"]) == (
        200,
        False,
        "sub",
    )
    assert (removed.status_code, gone.status_code, gone.json()["error_code"]) == (204, 404, "not_found")
    assert list(AuditEvent.objects.order_by("pk").values_list("action", "target")) == [
        ("oauth.issuer_save", "issuer:https://corp.okta.example"),
        ("oauth.issuer_save", "issuer:https://corp.okta.example"),
        ("oauth.issuer_delete", "issuer:https://corp.okta.example"),
    ]


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({**CORP, "algorithms": ["none"]}, {"algorithms": {"0": ['"none" is not a valid choice.']}}),
        (
            {"issuer": "corp"},
            {
                "issuer": ["An issuer is the identity provider's URL, as its assertions' iss says."],
                "jwks_url": ["Give the URL of its keys, or the keys themselves."],
            },
        ),
        ({**CORP, "jwks": {"keys": "many"}}, {"jwks": ['Keys are a JWK Set: {"keys": [...]}.']}),
        ({**CORP, "issuer": "https://corp.okta.example\x00"}, None),
    ],
)
def test_bad_settings_are_refused_by_field_and_nothing_is_stored(ops, body, errors):
    answer = ops("post", "/api/internal/trusted-issuers", body)

    assert (answer.status_code, answer.json()["error_code"]) == (400, "validation_error")
    if errors is not None:
        assert answer.json()["errors"] == errors
    assert not TrustedIssuer.objects.exists()
    assert not AuditEvent.objects.exists()


def test_the_same_issuer_twice_is_refused(ops):
    ops("post", "/api/internal/trusted-issuers", CORP)

    again = ops("post", "/api/internal/trusted-issuers", CORP)

    assert (again.status_code, list(again.json()["errors"])) == (400, ["issuer"])
    assert TrustedIssuer.objects.count() == 1


def test_only_administrators_manage_issuers(client, member, token_for, admin_user):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(member('olga'))}"}
    admin = {"HTTP_AUTHORIZATION": f"Bearer {token_for(admin_user)}"}

    refused = client.post(
        "/api/trusted-issuers", data=json.dumps(CORP), content_type="application/json", **headers
    )
    allowed = client.post(
        "/api/trusted-issuers", data=json.dumps(CORP), content_type="application/json", **admin
    )

    assert (refused.status_code, allowed.status_code) == (403, 201)
    assert TrustedIssuer.objects.count() == 1
