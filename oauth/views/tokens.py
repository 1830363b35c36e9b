"""The token page: issue a token (shown once, with a ready-to-paste MCP client configuration), and list
and revoke the caller's tokens in force. The same service as POST /api/tokens/generate issues them."""

from urllib.parse import urlencode

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
from accounts.reach import ANY, Reach
from accounts.selectors import tokens_in_force
from accounts.services import TokenRequestError, token_revoke, user_token_issue
from accounts.views.login import session_page
from core.confirm import confirmation_page, confirmed
from core.targets import TARGETS, TargetKind
from oauth.selectors import consents_of
from servers.clients import client_config, gateway_base_url
from servers.models import Server
from servers.policies import callable_tools, server_seen
from servers.selectors import servers_listed

MODES = ("server", "scopes", "all", "admin")
SHOWN_ONCE = "token-shown-once"  # the session key a new token waits under until its page is shown


@require_http_methods(["GET", "POST"])
@session_page
def tokens(request, principal):
    """GET/POST /api/tokens: the token form without JavaScript. A new token is kept in the session only
    until the page after the post (post/redirect/get: a reload makes no second token) shows it once.

    Issues through the same service as POST /api/tokens/generate, rate limit included. What the token may
    do defaults to the narrowest choice: the server the link named (or the first the caller sees) and its
    tools; a token that administers is made only when an administrator chooses it."""
    server, notice = _server_asked(principal, request.GET.get("server") or request.POST.get("server"))
    if request.method == "GET":
        grant = request.session.pop(SHOWN_ONCE, None)
        response = _tokens_page(request, principal, {}, server=server, grant=grant, notice=notice)
        if grant is not None:
            for name, value in NO_STORE.items():
                response[name] = value
        return response
    values = {
        "scope_mode": request.POST.get("scope_mode", ""),
        "tools": request.POST.getlist("tools"),
        "requested_scopes": request.POST.getlist("requested_scopes"),
        "expires_in_hours": request.POST.get("expires_in_hours", "").strip(),
        "description": request.POST.get("description", "").strip(),
    }
    data, error = _token_request(values, server)
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
    request.session[SHOWN_ONCE] = {
        "access_token": grant.access_token,
        "expires_in": grant.expires_in,
        "scopes": list(grant.scopes),
        "admin": grant.admin,
        "words": _grant_words(grant.admin, grant.reach, grant.scopes),
        "server": grant.reach.server if grant.reach is not None and grant.reach.server != ANY else "",
    }
    target = reverse("oauth2_provider:tokens-page")
    if server is not None:
        target += "?" + urlencode({"server": server.path})
    return HttpResponseRedirect(target, status=303)


def _token_request(values: dict, server: Server | None) -> tuple[dict, str]:
    """The form as the JSON endpoint's token request, validated the same way; or why it is not one."""
    data = {"description": values["description"]}
    if values["expires_in_hours"]:
        data["expires_in_hours"] = values["expires_in_hours"]
    mode = values["scope_mode"]
    if mode not in MODES:
        return {}, "Choose what the token may do."
    if mode == "server":
        if server is None:
            return {}, "Choose the server the token is for."
        if not values["tools"] and server.tools.exists():
            return {}, "Tick at least one tool, or choose another option."
        data |= {"server": server.path, "tools": values["tools"]}
    elif mode == "scopes":
        if not values["requested_scopes"]:
            return {}, "Choose at least one scope."
        data["requested_scopes"] = values["requested_scopes"]
    elif mode == "admin":
        data["admin"] = True
    serializer = TokenRequestSerializer(data=data)
    if not serializer.is_valid():
        reasons = (
            f"{name.replace('_', ' ').capitalize()}: {errors[0]}"
            for name, errors in serializer.errors.items()
        )
        return {}, " ".join(reasons)
    return serializer.validated_data, ""


def _server_asked(principal: Principal, path: str | None) -> tuple[Server | None, str]:
    """(the server a dashboard row's "create one" link or the form names, when the caller sees it and it is
    enabled; what the page tells the caller when the link named something else)."""
    if not path:
        return None, ""
    server = server_seen(principal, path)
    if server is not None and server.is_enabled:
        return server, ""
    shown = path[:200]
    if server is not None:
        return None, f"{shown} is disabled: a token for it reaches nothing now. Choose another server below."
    if TARGETS.registered(TargetKind.VIRTUAL_SERVER, path):
        return None, (
            f"{shown} is a virtual server, and a token for one server names one of the servers behind it. "
            f"Choose “Everything I may do” to reach {shown}, or one of its servers below."
        )
    return None, f"No server you can see is at {shown}. Choose one below."


def _server_words(chosen: Server | None, tools: list[str], ticked) -> str:
    """The preview of a token for one server, whatever the form holds (the script says the same)."""
    if chosen is None:
        return "reaches no server yet: choose one"
    if tools and not ticked:
        return "can call no tool yet: tick at least one"
    return Reach.of(chosen.path, ticked or [ANY]).in_words()


def _grant_words(admin: bool, reach: Reach | None, scopes) -> str:
    """What a token may do, in words (the preview, the new token and the list of tokens say the same)."""
    if admin:
        return "can do everything, including administering the registry"
    if reach is not None:
        return reach.in_words()
    if scopes:
        return f"can do what {', '.join(f'`{name}`' for name in scopes)} allow; cannot administer"
    return "identifies you and reaches nothing"


def _tokens_page(
    request, principal: Principal, values: dict, *, error="", grant=None, status=200, server=None, notice=""
):
    scopes = Scope.objects.filter(name__in=principal.scopes).order_by("name").values("name", "description")
    choosable = [row for row in servers_listed(principal)[0] if row.is_enabled]
    chosen = server or (choosable[0] if choosable else None)
    tools = callable_tools(principal, chosen.path if chosen is not None else None)
    mode = values.get("scope_mode") or ("server" if chosen is not None else "all")
    config = None
    if (
        grant is not None
    ):  # the new token, ready to paste into an MCP host (for the server it reaches, or all)
        target = server_seen(principal, grant["server"]) if grant["server"] else None
        servers = [target] if target is not None else choosable
        config = client_config(servers, gateway_base_url(request), grant["access_token"])
    ticked = values.get("tools") if "tools" in values else tools
    context = {
        "server": server,
        "chosen": chosen,
        "choosable": choosable,
        "tools": tools,
        "ticked": ticked,
        "previews": {
            "server": _server_words(chosen, tools, ticked),
            "scopes": "can do what the ticked scopes allow; cannot administer",
            "all": _grant_words(
                False, Reach.of(ANY, [ANY]) if principal.is_admin else None, principal.scopes
            ),
            "admin": _grant_words(True, None, ()),
        },
        "client_config": config,
        "scopes": list(scopes),
        "is_admin": principal.is_admin,
        "mode": mode,
        "values": values,
        "error": error,
        "notice": notice,
        "grant": grant,
        "lifetimes": _lifetimes(),
        "default_hours": settings.TOKEN_DEFAULT_HOURS,
        "my_tokens": _described(tokens_in_force(principal.user)) if principal.user is not None else [],
        "applications": consents_of(principal.user) if principal.user is not None else [],
        "may_issue": principal.user is not None and not principal.user.is_service_account,
    }
    return render(request, "oauth/tokens.html", context, status=status)


def _described(tokens) -> list:
    for token in tokens:
        token.words = _grant_words(token.is_admin, Reach.from_claim(token.reach), token.scopes)
    return tokens


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
    name = token.description or token.jti[:8]
    if not confirmed(request):
        return confirmation_page(
            request,
            heading=f"Revoke the token {name}?",
            consequence="It stops working at once, and so does every token obtained with it.",
            button="Revoke the token",
            back=reverse("oauth2_provider:tokens-page"),
            for_scripts=f"Scripts revoke a token with DELETE /api/tokens/{token.jti}.",
            done="revoked",
        )
    token_revoke(actor=principal, token=token)
    messages.success(request, f"Token {name} revoked.")
    response = HttpResponseRedirect(reverse("oauth2_provider:tokens-page"))
    response.status_code = 303
    return response
