"""The token page: issue a token (shown once, with a ready-to-paste MCP client configuration), and list
and revoke the caller's tokens in force. The same service as POST /api/tokens/generate issues them."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.api.serializers import TokenRequestSerializer
from accounts.api.views import NO_STORE
from accounts.choices import TokenKind
from accounts.models import IssuedToken, Scope
from accounts.principal import Principal
from accounts.selectors import tokens_in_force
from accounts.services import TokenRequestError, token_revoke, user_token_issue
from accounts.views.login import session_page
from oauth.selectors import consents_of
from servers.clients import client_config, gateway_base_url
from servers.models import Server
from servers.policies import server_seen
from servers.selectors import servers_listed


@require_http_methods(["GET", "POST"])
@session_page
def tokens(request, principal):
    """GET/POST /api/tokens: the token form without JavaScript; a new token is shown once, never stored.

    Issues through the same service as POST /api/tokens/generate, rate limit included."""
    server = _server_asked(principal, request.GET.get("server") or request.POST.get("server"))
    if request.method == "GET":
        return _tokens_page(request, principal, {"scope_mode": "all"}, server=server)
    values = {
        "scope_mode": "selected" if request.POST.get("scope_mode") == "selected" else "all",
        "requested_scopes": request.POST.getlist("requested_scopes"),
        "expires_in_hours": request.POST.get("expires_in_hours", "").strip(),
        "description": request.POST.get("description", "").strip(),
    }
    data, error = _token_request(values)
    if error:
        return _tokens_page(request, principal, values, error=error, status=400, server=server)
    try:
        grant = user_token_issue(principal=principal, **data)
    except TokenRequestError as error:
        response = _tokens_page(
            request, principal, values, error=str(error), status=error.status, server=server
        )
        for name, value in error.headers.items():
            response[name] = value
        return response
    response = _tokens_page(request, principal, {"scope_mode": "all"}, grant=grant, server=server)
    for name, value in NO_STORE.items():
        response[name] = value
    return response


def _token_request(values: dict) -> tuple[dict, str]:
    """The form as the JSON endpoint's token request, validated the same way; or why it is not one."""
    data = {"description": values["description"]}
    if values["expires_in_hours"]:
        data["expires_in_hours"] = values["expires_in_hours"]
    if values["scope_mode"] == "selected":
        if not values["requested_scopes"]:
            return {}, "Choose at least one scope."
        data["requested_scopes"] = values["requested_scopes"]
    serializer = TokenRequestSerializer(data=data)
    if not serializer.is_valid():
        reasons = (
            f"{name.replace('_', ' ').capitalize()}: {errors[0]}"
            for name, errors in serializer.errors.items()
        )
        return {}, " ".join(reasons)
    return serializer.validated_data, ""


def _server_asked(principal: Principal, path: str | None) -> Server | None:
    """The server a dashboard row's "create one" link names, when the caller sees it and it is enabled."""
    server = server_seen(principal, path) if path else None
    return server if server is not None and server.is_enabled else None


def _tokens_page(
    request, principal: Principal, values: dict, *, error="", grant=None, status=200, server=None
):
    scopes = Scope.objects.filter(name__in=principal.scopes).order_by("name").values("name", "description")
    config = None
    if grant is not None:  # the new token, ready to paste into an MCP host (for the server asked, or all)
        servers = [server] if server else [row for row in servers_listed(principal)[0] if row.is_enabled]
        config = client_config(servers, gateway_base_url(request), grant.access_token)
    context = {
        "server": server,
        "client_config": config,
        "scopes": list(scopes),
        "is_admin": principal.is_admin,
        "values": values,
        "error": error,
        "grant": grant,
        "lifetimes": _lifetimes(),
        "default_hours": settings.TOKEN_DEFAULT_HOURS,
        "my_tokens": tokens_in_force(principal.user) if principal.user is not None else [],
        "applications": consents_of(principal.user) if principal.user is not None else [],
        "may_issue": principal.user is not None and not principal.user.is_service_account,
    }
    return render(request, "oauth/tokens.html", context, status=status)


LIFETIME_CHOICES_HOURS = (1, 4, 8, 24, 24 * 7, 24 * 30, 24 * 90, 24 * 365)


def _lifetimes() -> list[int]:
    """The lifetimes the form offers, in hours: the usual ones up to TOKEN_MAX_HOURS, the default and
    the maximum."""
    choices = {hours for hours in LIFETIME_CHOICES_HOURS if hours <= settings.TOKEN_MAX_HOURS}
    return sorted(choices | {settings.TOKEN_DEFAULT_HOURS, settings.TOKEN_MAX_HOURS})


@require_POST
@session_page
def token_revoke_form(request, principal, jti):
    """POST /api/tokens/<jti>/revoke: revoke one of the caller's own tokens (and those it issued)."""
    token = IssuedToken.objects.filter(jti=jti, user=principal.user, kind=TokenKind.USER).first()
    if principal.user is None or token is None:
        context = {"status": 404, "message": "You have no such token."}
        return render(request, "servers/problem.html", context, status=404)
    token_revoke(actor=principal, token=token)
    messages.success(request, f"Token {token.description or token.jti[:8]} revoked.")
    response = HttpResponseRedirect(reverse("oauth2_provider:tokens-page"))
    response.status_code = 303
    return response
