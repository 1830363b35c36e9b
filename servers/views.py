"""Dashboard pages: the server list with its forms and the edit form.

Plain HTML forms that work without JavaScript. The checks and writes behind each form are the JSON API's
(`servers/api/dashboard.py`), so both surfaces answer the same caller the same way; these views only
turn the outcome into a page, or a flash message and a 303 back to the dashboard.
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib import messages
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from accounts.choices import UiPermission
from accounts.principal import Principal
from accounts.views import HOME, back_to, session_page
from core.errors import ApiError
from core.targets import TARGETS
from servers.api.dashboard import (
    dashboard_refresh,
    dashboard_register,
    dashboard_toggle,
    model_errors,
    register_message,
    toggle_message,
)
from servers.api.serializers import ServerEditSerializer
from servers.choices import DETAILED, HEALTH_MEANINGS, HealthStatus, Transport, UpstreamAuth
from servers.clients import client_config, gateway_base_url, gateway_transport
from servers.models import Server
from servers.policies import server_visible
from servers.recheck import next_check_at
from servers.selectors import IN_STATE, LIST_LIMIT, dashboard_servers, pending_tool_changes, status_rows
from servers.services import server_update

EDIT_FIELDS = (
    "name",
    "description",
    "proxy_pass_url",
    "tags",
    "is_python",
    "license",
    "upstream_auth",
    "user_secret_header",
)


# -- plumbing --------------------------------------------------------------------------------------


def prefers_html(request) -> bool:
    """A browser's form post asks for text/html first; API clients send JSON, `*/*` or nothing."""
    return request.get_preferred_type(["application/json", "text/html"]) == "text/html"


def form_or_json(api_view, page_view):
    """One URL for two audiences: a browser's form post gets `page_view`, everyone else `api_view`.

    Exempt here because each branch enforces CSRF itself: DRF's session authentication on the API, and
    `csrf_protect` on the page (so a client without a session still gets the API's 401, not a CSRF 403).
    """
    protected_page = csrf_protect(page_view)

    @csrf_exempt
    def view(request, *args, **kwargs):
        chosen = protected_page if prefers_html(request) else api_view
        return chosen(request, *args, **kwargs)

    return view


def see_other(url: str) -> HttpResponseRedirect:
    """303: after a form post the browser loads `url` with GET, so a reload never posts twice."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def problem_page(request, error: ApiError):
    """The API's refusal (403, 404, 400) as a page with the same status and message."""
    context = {"status": error.status_code, "message": str(error.detail)}
    return render(request, "servers/problem.html", context, status=error.status_code)


# -- the dashboard ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DashboardRow:
    """A server with what this caller may do to it, decided once here rather than in the template."""

    server: Server
    slug: str  # the path without its leading `/`, as URLs carry it
    can_toggle: bool
    can_refresh: bool
    can_edit: bool
    gateway_url: str  # where MCP clients reach it (servers/clients.py)
    client_config: str  # an MCP host's configuration for it, without a token (hosts that log in themselves)
    shows_detail: bool  # why it is unhealthy, shown on the row
    next_check_at: datetime | None
    pending_changes: int  # tool changes awaiting approval, for those who may approve them (else 0)
    restrictions: tuple[tuple[str, str], ...] = ()  # operators' quarantine and limits: (kind, words)


# The register and edit forms' transport choices: what the gateway and the health check speak.
TRANSPORT_CHOICES = ((Transport.STREAMABLE_HTTP, "Streamable HTTP"), (Transport.SSE, "SSE (legacy)"))
STATE_FILTERS = (("", "All"), ("enabled", "Enabled"), ("disabled", "Disabled"), ("unhealthy", "Not healthy"))
STATE_WORDS = {"enabled": "enabled", "disabled": "disabled", "unhealthy": "not healthy"}  # "… are <words>"


def _dashboard_page(request, principal: Principal, *, register: dict | None = None, status: int = 200):
    query = request.GET.get("query", "").strip() if request.method == "GET" else ""
    state = request.GET.get("state", "") if request.method == "GET" else ""
    state = state if state in IN_STATE else ""
    servers, counts, truncated = dashboard_servers(principal, query, state)
    base = gateway_base_url(request)
    pending = pending_tool_changes(
        [s.pk for s in servers if principal.can(UiPermission.MODIFY_SERVICE, s.path)]
    )
    restricted = TARGETS.restrictions_of([("server", s.path, tuple(s.tags or ())) for s in servers])
    rows = [
        DashboardRow(
            server=server,
            slug=server.path.lstrip("/"),
            can_toggle=principal.can(UiPermission.TOGGLE_SERVICE, server.path),
            can_refresh=principal.can(UiPermission.HEALTH_CHECK_SERVICE, server.path),
            can_edit=principal.can(UiPermission.MODIFY_SERVICE, server.path),
            gateway_url=gateway_transport(server, base)["url"],
            client_config=client_config([server], base),
            shows_detail=bool(server.health_detail) and server.health_status in DETAILED,
            next_check_at=next_check_at(server),
            pending_changes=pending.get(server.pk, 0),
            restrictions=tuple(restricted.get(server.path, ())),
        )
        for server in servers
    ]
    sections = [section(principal, base, query) for section in TARGETS.dashboard_sections]
    context = {
        "rows": rows,
        "sections": [section for section in sections if section],
        "summary": _summary(len(rows), counts["all"], query, state),
        "empty_text": _empty_text(query, state),
        "query": query,
        "state": state,
        "state_filters": STATE_FILTERS,
        "counts": counts,
        "truncated": truncated,
        "limit": LIST_LIMIT,
        "home": request.path if request.method == "GET" else HOME,
        "can_register": principal.can(UiPermission.REGISTER_SERVICE),
        "register": register or {"values": {}, "errors": {}},
        "status_labels": dict(HealthStatus.choices),
        "health_meanings": [(state, state.label, HEALTH_MEANINGS[state]) for state in HealthStatus],
        "may_set_headers": principal.is_admin,
        "transports": TRANSPORT_CHOICES,
        "upstream_modes": UpstreamAuth.choices,
    }
    return render(request, "servers/dashboard.html", context, status=status)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _summary(shown: int, matching: int, query: str, state: str) -> str:
    """The line under the heading, in the filter's words: "0 of 2 servers matching “walk” are unhealthy"."""
    matching_text = f" matching “{query}”" if query else ""
    if state:
        verb = "is" if shown == 1 else "are"
        return f"{shown} of {_plural(matching, 'server')}{matching_text} {verb} {STATE_WORDS[state]}"
    return (
        f"{_plural(shown, 'server')}{matching_text}" if query else f"{_plural(shown, 'server')} you can see"
    )


def _empty_text(query: str, state: str) -> str:
    """What the table says when the filter leaves no row (and when the live page removes the last one)."""
    if not (query or state):
        return "There are no servers you can see yet."
    matching_text = f" matching “{query}”" if query else ""
    return f"No server{matching_text}{f' is {STATE_WORDS[state]}' if state else ''}."


@require_GET
@session_page
def dashboard(request, principal):
    """GET / and GET /api/: the servers the caller may see, filtered by `query`."""
    return _dashboard_page(request, principal, register=_refused_registration(request))


@require_POST
@session_page
def toggle_form(request, principal, service_path):
    """The dashboard's enable/disable button."""
    try:
        server = dashboard_toggle(principal, service_path, request.POST.get("enabled"))
    except ApiError as error:
        return problem_page(request, error)
    messages.success(request, toggle_message(server))
    return see_other(back_to(request))


@require_POST
@session_page
def refresh_form(request, principal, service_path):
    """The dashboard's "check now" button."""
    try:
        server = dashboard_refresh(principal, service_path)
    except ApiError as error:
        return problem_page(request, error)
    messages.success(request, f"Health check of {server.path} queued.")
    return see_other(back_to(request))


REGISTER_FORM_KEY = "servers:register-form"  # session: a refused registration, shown once by the next GET
REGISTER_ANCHOR = "#register"
KEPT_VALUES = (
    "name",
    "path",
    "description",
    "proxy_pass_url",
    "tags",
    "license",
    "supported_transports",
    "upstream_auth",
    "user_secret_header",
)


@require_POST
@session_page
def register_form(request, principal):
    """The dashboard's register form. A refusal goes back (303) to the page it came from, which shows
    the form open, filled in, with its errors, and scrolled into view; a reload never posts again.
    Outbound headers are never kept in the session: they are typed again."""
    try:
        server = dashboard_register(principal, request.POST)
    except serializers.ValidationError as invalid:
        return _register_refused(request, invalid.detail)
    except ApiError as error:
        if not principal.can(UiPermission.REGISTER_SERVICE):  # no form to show the refusal in
            return problem_page(request, error)
        field = "path" if error.get_codes() == "conflict" else "non_field_errors"
        return _register_refused(request, {field: [str(error.detail)]})
    messages.success(request, register_message(server))
    return see_other(back_to(request))


def _register_refused(request, errors) -> HttpResponseRedirect:
    values = {name: request.POST.get(name, "")[:2000] for name in KEPT_VALUES if name in request.POST}
    values["is_python"] = request.POST.get("is_python", "")
    request.session[REGISTER_FORM_KEY] = {
        "values": values,
        "errors": {field: [str(message) for message in messages_] for field, messages_ in errors.items()},
    }
    messages.error(request, "The server was not registered: see the form below.")
    return see_other(back_to(request) + REGISTER_ANCHOR)


def _refused_registration(request) -> dict | None:
    """The refused registration to show again (once), or None."""
    refused = request.session.pop(REGISTER_FORM_KEY, None)
    return _form(refused["values"], refused["errors"]) if isinstance(refused, dict) else None


def _form(values, errors) -> dict:
    return {"values": values, "errors": errors, "open": True}


# -- editing ---------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@session_page
def edit(request, principal, service_path):
    """GET/POST /api/edit/{path} and /edit/{path}: the edit form (never showing outbound headers)."""
    try:
        server = server_visible(principal, service_path, UiPermission.MODIFY_SERVICE)
    except ApiError as error:
        return problem_page(request, error)
    if request.method == "GET":
        return _edit_page(request, principal, server, _form(_current_values(server), {}))
    context = {"may_set_headers": principal.is_admin}
    serializer = ServerEditSerializer(data=request.POST, context=context)
    if not serializer.is_valid():
        return _edit_page(request, principal, server, _form(request.POST, serializer.errors), status=400)
    fields = serializer.service_fields()
    if "tags" in request.POST:
        fields.setdefault("tags", [])  # a blank tags box reaches us as "not given"; here it means "none"
    try:
        server_update(actor=principal, server=server, **fields)
    except DjangoValidationError as invalid:
        server.refresh_from_db()
        return _edit_page(request, principal, server, _form(request.POST, model_errors(invalid)), status=400)
    messages.success(request, f"Saved {server.name} ({server.path}).")
    return see_other(back_to(request))


def _current_values(server: Server) -> dict:
    values = {name: getattr(server, name) for name in EDIT_FIELDS}
    values["tags"] = ", ".join(server.tags)
    sse_only = server.supported_transports == [Transport.SSE]
    values["supported_transports"] = Transport.SSE if sse_only else Transport.STREAMABLE_HTTP
    return values


def _edit_page(request, principal: Principal, server: Server, form: dict, *, status: int = 200):
    context = {
        "server": server,
        "form": form,
        "back": back_to(request),
        "header_count": len(server.headers),
        "may_set_headers": principal.is_admin,
        "transports": TRANSPORT_CHOICES,
        "upstream_modes": UpstreamAuth.choices,
    }
    return render(request, "servers/edit.html", context, status=status)


# -- the public status page ------------------------------------------------------------------------


@require_GET
def status(request):
    """GET /status: the health of every enabled server for anyone, kept live by `/ws/health_status`."""
    labels = dict(HealthStatus.choices)
    rows = [{**row, "label": labels[row["health_status"]]} for row in status_rows()]
    return render(request, "servers/status.html", {"rows": rows, "status_labels": labels})
