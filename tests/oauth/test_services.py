"""The authorization server's writes and the principal of an application's token: consents narrow (and
re-narrow) what tokens may do at once, withdrawal ends them, unused registrations are removed."""

from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value
from rest_framework import exceptions

from accounts.authentication import principal_from_bearer
from accounts.choices import AuthMethod
from accounts.models import AuditEvent
from oauth import services
from oauth.tasks import purge_unused_applications_task
from oauth.tokens import access_token

pytestmark = pytest.mark.django_db

RESOURCE = "http://testserver/alpha/mcp"


@pytest.fixture
def olga(member, scope_factory):
    scope_factory("alpha-read", group="users", server_rules=[{"server": "/alpha", "methods": ["tools/list"]}])
    scope_factory(
        "alpha-call",
        group="users",
        server_rules=[{"server": "/alpha", "methods": ["tools/call"], "tools": ["*"]}],
    )
    return member("olga", "users")


def _application(source="dcr", **fields) -> Application:
    return Application.objects.create(
        name="Host",
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/cb",
        registration_source=source,
        **fields,
    )


def _consent(user, application, scopes=None, *, remember=False):
    """`user` approves `application` for RESOURCE with `scopes` (None: all of the user's rights)."""
    return services.consent_record(
        user=user,
        application=application,
        all_rights=scopes is None,
        scopes=scopes or [],
        resource=RESOURCE,
        remember=remember,
    )


def _token(user, application, resource=RESOURCE) -> str:
    raw = access_token(None)
    token = AccessToken(
        user=user,
        application=application,
        expires=timezone.now() + timedelta(hours=1),
        scope="mcp",
        resource=[resource],
    )
    set_token_value(token, raw)
    token.save()
    return raw


def test_an_applications_token_carries_the_consented_rights_bound_to_its_resource(olga):
    application = _application()
    _consent(olga, application, ["alpha-read"])
    raw = _token(olga, application)

    principal = principal_from_bearer(raw)

    assert (principal.auth_method, principal.audience, principal.oauth_scopes, principal.scopes) == (
        AuthMethod.APPLICATION,
        "/alpha",
        frozenset({"mcp"}),
        ("alpha-read",),
    )
    assert principal.allows_mcp("/alpha", "tools/list")
    assert not principal.allows_mcp("/alpha", "tools/call", "x")

    # approving again with other rights changes what the token already issued may do, at once
    _consent(olga, application, ["alpha-call"], remember=True)

    assert principal_from_bearer(raw).scopes == ("alpha-call",)
    assert AuditEvent.objects.filter(action="oauth.consent").count() == 2


def test_withdrawing_a_consent_ends_its_tokens_at_once(olga):
    application = _application()
    consent = _consent(olga, application, None)
    raw = _token(olga, application)
    assert principal_from_bearer(raw).username == "olga"  # now cached in this process

    revoked = services.consent_withdraw(actor=olga, consent=consent)

    with pytest.raises(exceptions.AuthenticationFailed, match="revoked"):
        principal_from_bearer(raw)
    assert (revoked, AccessToken.objects.count()) == (1, 0)


def test_unused_self_registered_applications_are_removed(olga, settings):
    settings.OAUTH_UNUSED_REGISTRATION_HOURS = 24
    old = timezone.now() - timedelta(hours=25)
    unused = _application()
    authorized = _application()
    manual = _application(source="manual")
    recent = _application()
    Application.objects.filter(pk__in=[unused.pk, authorized.pk, manual.pk]).update(created=old)
    _consent(olga, authorized, None)

    removed = purge_unused_applications_task()
    again = purge_unused_applications_task()

    assert (removed, again) == (1, 0)
    assert set(Application.objects.values_list("pk", flat=True)) == {authorized.pk, manual.pk, recent.pk}
    assert AuditEvent.objects.get(action="oauth.clients_purge").detail["removed"] == 1


def test_applications_and_consents_are_listed_in_the_console(admin_client, olga):
    application = _application()
    _consent(olga, application, None)

    applications = admin_client.get("/admin/oauth2_provider/application/")
    consents = admin_client.get("/admin/oauth/consent/")

    assert applications.status_code == consents.status_code == 200
    assert application.client_id in applications.content.decode()
    assert "olga" in consents.content.decode()


def test_an_administrators_consent_administers_only_when_chosen_and_tools_narrow_it(member):
    ada = member("ada", "mcp-registry-admin")
    application = _application()
    services.consent_record(
        user=ada,
        application=application,
        all_rights=True,
        scopes=[],
        resource=RESOURCE,
        server_path="/alpha",
        tools=["add"],
        remember=False,
    )
    raw = _token(ada, application)

    narrowed = principal_from_bearer(raw)
    assert (narrowed.is_admin, narrowed.shown_tools("/alpha")) == (False, frozenset({"add"}))
    assert narrowed.allows_mcp("/alpha", "tools/call", "add") is True
    assert narrowed.allows_mcp("/alpha", "tools/call", "echo") is False

    services.consent_record(
        user=ada,
        application=application,
        all_rights=True,
        administers=True,
        scopes=[],
        resource=RESOURCE,
        server_path="/alpha",
        remember=False,
    )

    administering = principal_from_bearer(raw)
    assert (administering.is_admin, administering.reach) == (True, None)
    assert AuditEvent.objects.filter(action="oauth.consent").latest("pk").detail["administers"] is True


def test_a_members_consent_with_chosen_tools_calls_only_those(olga):
    application = _application()
    services.consent_record(
        user=olga,
        application=application,
        all_rights=False,
        scopes=["alpha-read", "alpha-call"],
        resource=RESOURCE,
        server_path="/alpha",
        tools=["echo"],
        remember=False,
    )

    principal = principal_from_bearer(_token(olga, application))

    assert principal.allows_mcp("/alpha", "tools/call", "echo") is True
    assert principal.allows_mcp("/alpha", "tools/call", "add") is False
    assert principal.allows_mcp("/alpha", "tools/list") is True
