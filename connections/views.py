"""The Connections page (`/connections`): every server and agent the user may use that needs their own
credential (core/targets.py `upstreams`), with connect, replace and disconnect. Connecting happens on a
page of ours that needs the user's session, so a link in a chat can only bring someone to their own page:
a secret is typed there (sealed and never shown again, not even to its owner), or a sign-in at the
target's authorization server begins there with a button (connections/oauth/flow.py) and ends at our
callback, in the same user's session."""

from django.contrib import messages
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.views import session_page
from connections.choices import Purpose
from connections.oauth import flow as oauth_flow
from connections.oauth.client import client_metadata
from connections.oauth.discovery import UpstreamOAuthRefused, discover
from connections.selectors import connection_of, connections_of, target_usable
from connections.services import (
    ConnectionRefused,
    credential_disconnect,
    credential_secret_connect,
    credential_signed_in,
)
from core.confirm import confirmation_page, confirmed
from core.content_policy import policy_sending_forms_to
from core.errors import ApiError, ErrorCode
from core.public_url import base_url, origin_of
from core.targets import TARGETS, TargetKind
from core.validators import normalize_path
from servers.choices import USER_CREDENTIAL_MODES, UpstreamAuth
from servers.views import problem_page

PAGE = "/connections"


@require_http_methods(["GET"])
@session_page
def connections_page(request, principal):
    """GET /connections: the servers and agents that need the user's own credential, connected or not."""
    return render(request, "connections/connections.html", {"rows": connections_of(principal)})


@require_http_methods(["GET", "POST"])
@session_page
def connect_page(request, principal, service_path):
    """GET/POST /connections/<path>: connect (or replace) the user's secret for one server or agent."""
    try:
        target = _needing_credential(principal, service_path)
    except ApiError as refusal:
        return problem_page(request, refusal)
    if target.upstream_auth == UpstreamAuth.USER_OAUTH:
        return _sign_in_page(request, principal, target)
    problem = None
    if request.method == "POST":
        try:
            credential_secret_connect(
                actor=principal, target=target, user=principal.user, secret=request.POST.get("secret", "")
            )
        except ConnectionRefused as refused:
            problem = str(refused)
        else:
            messages.success(
                request, f"{target.name} is connected: go back to your {_client_of(target)} and try again."
            )
            return HttpResponseRedirect(PAGE)
    context = {
        "target": target,
        "kind": target.TARGET_KIND,
        "origin": origin_of(target.upstream_url),
        "header_name": target.user_secret_header.partition(":")[0].strip(),
        "connected": connection_of(principal, target) is not None,
        "problem": problem,
    }
    return render(request, "connections/connect.html", context, status=400 if problem else 200)


def _sign_in_page(request, principal, target):
    """GET: what signing in at the target means; POST: begin it (a redirect to its authorization server).
    An administrator can make the target's discovery connection here too (`purpose=discovery`)."""
    purpose = request.POST.get("purpose") if request.method == "POST" else request.GET.get("purpose")
    discovery = purpose == Purpose.DISCOVERY and principal.is_admin
    problem = authorization = None
    if request.method == "GET":
        try:
            authorization = discover(target.upstream_url, target.TARGET_KIND)
        except UpstreamOAuthRefused as refused:
            problem = str(refused)
    else:
        try:
            authorization_url = oauth_flow.start(
                target=target,
                by=principal.user,
                purpose=Purpose.DISCOVERY if discovery else Purpose.USER,
                base=base_url(request),
            )
        except UpstreamOAuthRefused as refused:
            problem = str(refused)
        else:
            return HttpResponseRedirect(authorization_url)
    context = {
        "target": target,
        "kind": target.TARGET_KIND,
        "origin": origin_of(target.upstream_url),
        "connected": connection_of(principal, target) is not None,
        "discovery": discovery,
        "issuer": authorization.issuer if authorization else "",
        "problem": problem,
    }
    page = render(request, "connections/sign_in.html", context, status=502 if problem else 200)
    if authorization is not None:  # the form's answer redirects to the target's sign-in page
        page["Content-Security-Policy"] = policy_sending_forms_to(authorization.authorization_endpoint)
    return page


@require_http_methods(["GET"])
@session_page
def sign_in_callback(request, principal):
    """GET /connections/oauth/callback: the end of a sign-in, in the session of the user who began it."""
    try:
        signed_in = oauth_flow.finish(user=principal.user, params=request.GET)
        user = None
        if signed_in.purpose == Purpose.USER:
            user = principal.user
        elif not principal.is_admin:
            raise ConnectionRefused("Only an administrator makes a discovery connection.")
        credential = credential_signed_in(actor=principal, user=user, signed_in=signed_in)
    except (oauth_flow.SignInRefused, ConnectionRefused) as refused:
        return render(request, "connections/sign_in_failed.html", {"problem": str(refused)}, status=400)
    target = credential.target
    if signed_in.purpose == Purpose.DISCOVERY:
        messages.success(request, f"The discovery connection of {target.name} is made.")
        return HttpResponseRedirect(TARGETS.upstreams[target.TARGET_KIND].page(target))
    messages.success(
        request, f"{target.name} is connected: go back to your {_client_of(target)} and try again."
    )
    return HttpResponseRedirect(PAGE)


@require_POST
@session_page
def disconnect(request, principal, service_path):
    """POST /connections/<path>/disconnect: forget the user's credential for the server or agent, once
    confirmed (core/confirm.py)."""
    try:
        target = _needing_credential(principal, service_path)
    except ApiError as refusal:
        return problem_page(request, refusal)
    credential = connection_of(principal, target)
    if credential is not None and not confirmed(request):
        return confirmation_page(
            request,
            heading=f"Disconnect {target.name}?",
            consequence=(
                f"Your credential for {target.name} is deleted here (a sign-in is also revoked where "
                "its server allows it). Calls through the gateway then ask you to connect again."
            ),
            button="Disconnect",
            back=PAGE,
            done="disconnected",
        )
    if credential is not None:
        credential_disconnect(actor=principal, credential=credential)
        messages.success(request, f"{target.name} is disconnected; your secret is deleted.")
    return HttpResponseRedirect(PAGE)


@require_http_methods(["GET"])
def client_document(request):
    """GET /connections/oauth/client.json: the registry's Client ID Metadata Document, by which an upstream
    authorization server that supports them knows the registry (its URL is the client id)."""
    response = JsonResponse(client_metadata(base_url(request)))
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _client_of(target) -> str:
    return "A2A client" if target.TARGET_KIND == TargetKind.AGENT else "MCP host"


def _needing_credential(principal, service_path: str):
    """The server or agent at `service_path` when the caller may use it and it takes each user's
    credential."""
    path = normalize_path(service_path)
    target = target_usable(principal, path)
    if target is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No server or agent you may use is registered at {path}.")
    if target.upstream_auth not in USER_CREDENTIAL_MODES:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"{target.path} needs no credential of yours.")
    if principal.user is None or principal.user.is_service_account:
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, "Service accounts cannot connect credentials.")
    return target
