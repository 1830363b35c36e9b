"""The Connections page (`/connections`): every server the user may use that needs their own credential,
with connect, replace and disconnect. Connecting happens on a page of ours that needs the user's session,
so a link in a chat can only bring someone to their own page: a secret is typed there (sealed and never
shown again, not even to its owner), or a sign-in at the server's authorization server begins there with a
button (connections/oauth/flow.py) and ends at our callback, in the same user's session."""

from django.contrib import messages
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.views import session_page
from connections.choices import Purpose
from connections.oauth import flow as oauth_flow
from connections.oauth.client import client_metadata
from connections.oauth.discovery import UpstreamOAuthRefused, discover
from connections.selectors import connection_of, connections_of
from connections.services import (
    ConnectionRefused,
    credential_disconnect,
    credential_secret_connect,
    credential_signed_in,
)
from core.content_policy import policy_sending_forms_to
from core.errors import ApiError, ErrorCode
from core.public_url import base_url, origin_of
from servers.choices import USER_CREDENTIAL_MODES, UpstreamAuth
from servers.models import Server
from servers.policies import server_visible
from servers.views import problem_page

PAGE = "/connections"


@require_http_methods(["GET"])
@session_page
def connections_page(request, principal):
    """GET /connections: the servers that need the user's own credential, connected or not."""
    return render(request, "connections/connections.html", {"rows": connections_of(principal)})


@require_http_methods(["GET", "POST"])
@session_page
def connect_page(request, principal, service_path):
    """GET/POST /connections/<path>: connect (or replace) the user's secret for one server."""
    try:
        server = _needing_credential(principal, service_path)
    except ApiError as refusal:
        return problem_page(request, refusal)
    if server.upstream_auth == UpstreamAuth.USER_OAUTH:
        return _sign_in_page(request, principal, server)
    problem = None
    if request.method == "POST":
        try:
            credential_secret_connect(
                actor=principal, server=server, user=principal.user, secret=request.POST.get("secret", "")
            )
        except ConnectionRefused as refused:
            problem = str(refused)
        else:
            messages.success(request, f"{server.name} is connected: go back to your MCP host and try again.")
            return HttpResponseRedirect(PAGE)
    context = {
        "server": server,
        "origin": origin_of(server.proxy_pass_url),
        "header_name": server.user_secret_header.partition(":")[0].strip(),
        "connected": connection_of(principal, server) is not None,
        "problem": problem,
    }
    return render(request, "connections/connect.html", context, status=400 if problem else 200)


def _sign_in_page(request, principal, server):
    """GET: what signing in at the server means; POST: begin it (a redirect to its authorization server).
    An administrator can make the server's discovery connection here too (`purpose=discovery`)."""
    purpose = request.POST.get("purpose") if request.method == "POST" else request.GET.get("purpose")
    discovery = purpose == Purpose.DISCOVERY and principal.is_admin
    problem = authorization = None
    if request.method == "GET":
        try:
            authorization = discover(server.proxy_pass_url)
        except UpstreamOAuthRefused as refused:
            problem = str(refused)
    else:
        try:
            authorization_url = oauth_flow.start(
                server=server,
                by=principal.user,
                purpose=Purpose.DISCOVERY if discovery else Purpose.USER,
                base=base_url(request),
            )
        except UpstreamOAuthRefused as refused:
            problem = str(refused)
        else:
            return HttpResponseRedirect(authorization_url)
    context = {
        "server": server,
        "origin": origin_of(server.proxy_pass_url),
        "connected": connection_of(principal, server) is not None,
        "discovery": discovery,
        "issuer": authorization.issuer if authorization else "",
        "problem": problem,
    }
    page = render(request, "connections/sign_in.html", context, status=502 if problem else 200)
    if authorization is not None:  # the form's answer redirects to the server's sign-in page
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
    server = Server.objects.get(pk=credential.server_id)
    if signed_in.purpose == Purpose.DISCOVERY:
        messages.success(request, f"The discovery connection of {server.name} is made.")
        return HttpResponseRedirect(f"/servers{server.path}")
    messages.success(request, f"{server.name} is connected: go back to your MCP host and try again.")
    return HttpResponseRedirect(PAGE)


@require_POST
@session_page
def disconnect(request, principal, service_path):
    """POST /connections/<path>/disconnect: forget the user's credential for the server."""
    try:
        server = _needing_credential(principal, service_path)
    except ApiError as refusal:
        return problem_page(request, refusal)
    credential = connection_of(principal, server)
    if credential is not None:
        credential_disconnect(actor=principal, credential=credential)
        messages.success(request, f"{server.name} is disconnected; your secret is deleted.")
    return HttpResponseRedirect(PAGE)


@require_http_methods(["GET"])
def client_document(request):
    """GET /connections/oauth/client.json: the registry's Client ID Metadata Document, by which an upstream
    authorization server that supports them knows the registry (its URL is the client id)."""
    response = JsonResponse(client_metadata(base_url(request)))
    response["Cache-Control"] = "public, max-age=3600"
    return response


def _needing_credential(principal, service_path: str):
    """The server at `service_path` when the caller may use it and it takes each user's credential."""
    server = server_visible(principal, service_path)
    if server.upstream_auth not in USER_CREDENTIAL_MODES:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"{server.path} needs no credential of yours.")
    if principal.user is None or principal.user.is_service_account:
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, "Service accounts cannot connect credentials.")
    if not principal.allows_mcp(server.path, "initialize"):
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, f"You may not use {server.path}.")
    return server
