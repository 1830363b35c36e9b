"""The console's effective-access view (`/admin/access/`, administrators): for a user or a group, what
they can see and call (servers and their tools, agents, console permissions, publish names), as the
registry's rules decide it for them (the same Principal every surface asks), with the blocks, limits and
quarantines that apply; for a server or a virtual server, which groups reach it and through which scopes,
and what operators restrict there. Looking at a user's access is audited; so is "view as this user"
(accounts/view_as.py), which shows the whole console with the user's rights, read only."""

from dataclasses import dataclass

from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_POST

from accounts.choices import AuditAction, AuthMethod
from accounts.models import User
from accounts.principal import (
    Principal,
    ServerRule,
    principal_for_groups,
    principal_for_user,
    principal_of_each_group,
)
from accounts.scope_rules import KNOWN_METHODS
from accounts.services import audit_event_record
from accounts.services.view_as import view_as_start
from agents.models import Agent
from core.targets import TARGETS
from core.validators import normalize_path
from limits.selectors import caller_restrictions_of
from servers.models import Server, ToolBlock
from servers.policies import tools_visible
from virtual_servers.models import VirtualServer


@dataclass(frozen=True)
class ServerAccess:
    server: Server
    methods: list[str]  # of the usual MCP methods, those it may send
    callable_tools: list[str]
    shown_tools: list[str]
    blocked_tools: list[str]  # blocked for everyone (servers/services/tool_blocks.py)
    restrictions: list[tuple[str, str]]  # the server's quarantine and limits, in words


def access_of(principal: Principal) -> dict:
    """Everything `principal` can see and call."""
    rows = []
    shown = {}
    for tool in tools_visible(principal).select_related("server").order_by("name"):
        shown.setdefault(tool.server_id, []).append(tool.name)
    servers = list(Server.objects.visible_to(principal).order_by("path"))
    blocked: dict[int, list[str]] = {}
    for server_id, name in (
        ToolBlock.objects.filter(server__in=servers).order_by("name").values_list("server_id", "name")
    ):
        blocked.setdefault(server_id, []).append(name)
    restricted = TARGETS.restrictions_of([("server", s.path, tuple(s.tags or ())) for s in servers])
    for server in servers:
        names = shown.get(server.pk, [])
        callable_tools = [name for name in names if principal.allows_mcp(server.path, "tools/call", name)]
        methods = [m for m in KNOWN_METHODS if m != "tools/call" and principal.allows_mcp(server.path, m)]
        if callable_tools:
            methods.append("tools/call")
        rows.append(
            ServerAccess(
                server=server,
                methods=["every method"] if principal.is_admin else methods,
                callable_tools=callable_tools,
                shown_tools=names,
                blocked_tools=blocked.get(server.pk, []),
                restrictions=restricted.get(server.path, []),
            )
        )
    return {
        "servers": rows,
        "caller_restrictions": caller_restrictions_of(principal.username, principal.groups),
        "agents": list(Agent.objects.visible_to(principal).order_by("path").values_list("path", "name")),
        "ui": sorted((name, sorted(paths)) for name, paths in principal.ui.items()),
        "publish_names": principal.publish_names,
    }


def reaching(path: str) -> list[dict]:
    """The groups whose members reach the server at `path`, with the scopes and rules that let them."""
    found = []
    for principal in principal_of_each_group():
        group = principal.groups[0]
        if principal.is_admin:
            found.append({"group": group, "how": "administrators: everything", "rules": []})
            continue
        rules = [rule for rule in principal.server_rules if rule.server in ("*", path)]
        lists = principal.can("list_service", path)
        if rules or lists:
            found.append(
                {"group": group, "how": ", ".join(principal.scopes), "rules": [_said(r) for r in rules]}
            )
    return found


def _said(rule: ServerRule) -> str:
    methods = "every method" if "*" in rule.methods else ", ".join(sorted(rule.methods))
    tools = "every tool" if "*" in rule.tools else ", ".join(sorted(rule.tools)) or "no tool"
    return f"{rule.server}: {methods}; tools: {tools}"


def effective_access(request):
    viewer = admin.site.principal_of(request)
    if not viewer.is_admin:
        raise PermissionDenied
    username, group, path = (request.GET.get(key, "").strip() for key in ("user", "group", "server"))
    context = {**admin.site.each_context(request), "title": "Effective access", "asked": None}
    if username:
        user = User.objects.filter(username=username).first()
        if user is not None:
            subject = principal_for_user(user, auth_method=AuthMethod.SESSION)
            audit_event_record(actor=viewer, action=AuditAction.ACCESS_VIEW, target=f"user:{username}")
            context |= {"asked": f"the user {username}", "is_admin": subject.is_admin, **access_of(subject)}
            context["viewable_user"] = username if user.is_active and user.pk != request.user.pk else ""
        else:
            context["problem"] = f"No user is called {username}."
    elif group:
        if Group.objects.filter(name=group).exists():
            subject = principal_for_groups([group])
            context |= {"asked": f"members of {group}", "is_admin": subject.is_admin, **access_of(subject)}
        else:
            context["problem"] = f"No group is called {group}."
    elif path:
        context |= _target_asked(normalize_path(path))
    context |= {
        "users": list(User.objects.order_by("username").values_list("username", flat=True)[:500]),
        "groups": list(Group.objects.order_by("name").values_list("name", flat=True)),
        "paths": list(Server.objects.order_by("path").values_list("path", flat=True)[:500]),
        "virtual_paths": list(VirtualServer.objects.order_by("path").values_list("path", flat=True)[:500]),
    }
    return render(request, "admin/access.html", context)


def _names(rows, field: str) -> list[str]:
    return list(rows.values_list(field, flat=True))


def _target_asked(path: str) -> dict:
    """Who reaches the server or virtual server at `path`, what operators restrict there, and (a virtual
    server) which servers it carries."""
    server = Server.objects.filter(path=path).first()
    virtual = VirtualServer.objects.filter(path=path).first() if server is None else None
    if server is None and virtual is None:
        return {"problem": f"No server or virtual server is registered at {path}."}
    kind, tags = ("server", tuple(server.tags or ())) if server is not None else ("virtual_server", ())
    return {
        "asked_server": server or virtual,
        "asked_kind": "virtual server" if virtual is not None else "server",
        "reaching": reaching(path),
        "asked_restrictions": TARGETS.restrictions_of([(kind, path, tags)]).get(path, []),
        "asked_blocked": list(server.tool_blocks.order_by("name").values_list("name", flat=True))
        if server
        else [],
        "asked_members": list(virtual.members.order_by("position").values_list("server__path", flat=True))
        if virtual is not None
        else [],
    }


@require_POST
def view_as(request):
    """POST /admin/access/view-as: an administrator starts viewing the console as a user, read only."""
    viewer = admin.site.principal_of(request)
    user = User.objects.filter(username=request.POST.get("user", "").strip(), is_active=True).first()
    if user is None:
        raise Http404("No such active user.")
    view_as_start(session=request.session, actor=viewer, user=user)
    return HttpResponseRedirect("/")
