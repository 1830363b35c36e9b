"""The Connections page (`/connections`): every server the user may use that needs their own credential,
with connect, replace and disconnect. Connecting happens on a page of ours that needs the user's session,
so a link in a chat can only bring someone to their own page. A secret is typed, sealed and never shown
again, not even to its owner."""

from django.contrib import messages
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.views import session_page
from connections.oauth_client import client_metadata
from connections.selectors import connection_of, connections_of
from connections.services import ConnectionRefused, credential_disconnect, credential_secret_connect
from core.errors import ApiError, ErrorCode
from core.public_url import base_url
from servers.choices import USER_CREDENTIAL_MODES
from servers.policies import server_visible
from servers.upstream_auth import origin_of
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
