"""Who sees and may change which server and tool: the servers app's one set of decisions, asked by the
services, the JSON APIs, the pages, the websockets and search alike, so every surface answers a caller
the same way.

- A server is seen by admins, by holders of `list_service` on it (or on `all`) and by anyone with an MCP
  rule on it (`Server.objects.visible_to`); an unseen server is answered with 404, never 403, so its
  existence stays secret.
- A tool is shown as `Principal.shown_tools` says (`Tool.objects.visible_to`): where the caller's tool
  rules reach a server, only the tools they let it call, as the gateway's tools/list shows them; the
  dashboard's counts, the tools API, the details and search show the same tools.
- Each action on a seen server needs its UI permission on that path (403 otherwise).
"""

from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    Subquery,
    When,
    prefetch_related_objects,
)
from django.db.models.functions import Coalesce

from accounts.choices import UiPermission
from accounts.principal import Principal
from accounts.reach import ANY as ANY_TOOL
from accounts.reach import Reach
from core.errors import ApiError, ErrorCode
from core.validators import normalize_path
from servers.choices import USER_CREDENTIAL_MODES
from servers.models import Server, Tool


def server_visible(
    principal: Principal, service_path: str, permission: UiPermission | None = None, *, lock: bool = False
) -> Server:
    """The server at `service_path` if the caller sees it (else 404), and, when `permission` is given,
    may do that to it (else 403)."""
    path = normalize_path(service_path)
    servers = Server.objects.visible_to(principal).for_listing()
    server = (servers.select_for_update() if lock else servers).filter(path=path).first()
    if server is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No server is registered at {path}.")
    if permission is not None:
        require(principal, permission, server.path)
    return server


def server_seen(principal: Principal, service_path: str) -> Server | None:
    """`server_visible` for surfaces with their own not-found answer (/v0.1): the server, or None."""
    try:
        return server_visible(principal, service_path)
    except ApiError:
        return None


def require(principal: Principal, permission: UiPermission, path: str | None = None) -> None:
    """403 unless the caller holds `permission` on `path` (or anywhere, when no path is given)."""
    if not principal.can(permission, path):
        where = f" for {path}" if path else ""
        raise ApiError(403, ErrorCode.PERMISSION_DENIED, f"You lack {permission} permission{where}.")


def sees_servers(principal: Principal) -> bool:
    """Does the caller see any server at all?"""
    return any(principal.server_visibility())


def server_may(principal: Principal, permission: UiPermission, server: Server | None = None) -> bool:
    """`require` as a question: may the caller do `permission` to `server` (to some server, for None)?"""
    return principal.can(permission, server.path if server is not None else None)


def server_may_delete(principal: Principal) -> bool:
    """Deleting a server (its tools and every grant naming it) is an administrator's."""
    return principal.is_admin


def tools_visible(principal: Principal, server: Server | None = None):
    """The tools the caller sees (of one server, when given), in name order."""
    tools = Tool.objects.visible_to(principal).defer("embedding")
    return tools.filter(server=server) if server is not None else tools


def tool_counts(principal: Principal, paths) -> dict[str, int]:
    """For each server in `paths` whose tools the caller's rules narrow, how many of them it is shown;
    the others keep their stored `num_tools`. One query, none when nothing is narrowed."""
    narrowed = sorted(path for path in paths if principal.shown_tools(path) is not None)
    if not narrowed:
        return {}
    counts = dict(
        tools_visible(principal)
        .filter(server__path__in=narrowed)
        .order_by()
        .values_list("server__path")
        .annotate(count=Count("pk"))
        .values_list("server__path", "count")
    )
    return {path: counts.get(path, 0) for path in narrowed}


def shown_tool_count(principal: Principal):
    """`num_tools` as the caller is shown it, as a query expression (the console's lists annotate their
    rows with it): where the caller's tool rules narrow a server, the tools it is shown there; elsewhere
    the stored count. The same rule as `tool_counts`, for querysets."""
    rules = principal.tool_rules()
    if principal.is_admin or any(rule.server == ANY_TOOL and ANY_TOOL in rule.tools for rule in rules):
        return F("num_tools")
    whole = {rule.server for rule in rules if ANY_TOOL in rule.tools}
    if any(rule.server == ANY_TOOL for rule in rules):
        narrowed = ~Q(path__in=sorted(whole))
    else:
        narrowed = Q(path__in=sorted({rule.server for rule in rules} - whole))
    shown = (
        tools_visible(principal)
        .filter(server=OuterRef("pk"))
        .order_by()
        .values("server")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return Case(
        When(narrowed, then=Coalesce(Subquery(shown), 0)), default=F("num_tools"), output_field=IntegerField()
    )


def shown_with_tools(principal: Principal, servers: list[Server]) -> list[Server]:
    """Servers read for display, their `tools` and `num_tools` cut to the tools the caller is shown (two
    queries); such instances are never saved."""
    prefetch_related_objects(servers, Prefetch("tools", queryset=tools_visible(principal)))
    return shown_counts(principal, servers)


def shown_counts(principal: Principal, servers: list[Server]) -> list[Server]:
    """Servers read for display, `num_tools` cut to the tools the caller is shown; never saved."""
    counts = tool_counts(principal, {server.path for server in servers})
    for server in servers:
        server.num_tools = counts.get(server.path, server.num_tools)
    return servers


def reach_for(principal: Principal, service_path: str, tools) -> Reach:
    """The reach of a credential for one server and chosen tools (`tools` empty: every tool the caller
    may call there), checked: the caller sees the server, each tool is one of its known tools and the
    caller may call it (core/targets.py's token_reach: the token service asks this, for every surface)."""
    from accounts.services import TokenRequestError

    server = server_seen(principal, service_path)
    if server is None:
        path = normalize_path(service_path) if service_path else service_path
        raise TokenRequestError(f"No server is registered at {path}.", code="not_found", status=404)
    wanted = list(dict.fromkeys(name for name in tools or [] if name != ANY_TOOL))
    if not wanted:
        return Reach.of(server.path, [ANY_TOOL])
    known = set(server.tools.values_list("name", flat=True))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise TokenRequestError(
            f"{server.path} has no tool {', '.join(unknown)}; "
            f"its tools: {', '.join(sorted(known)) or 'none known yet'}.",
            code="validation_error",
            status=400,
        )
    refused = [name for name in wanted if not principal.allows_mcp(server.path, "tools/call", name)]
    if refused:
        raise TokenRequestError(
            f"You may not call {', '.join(refused)} on {server.path}.", code="permission_denied", status=403
        )
    return Reach.of(server.path, wanted)


def callable_tools(principal: Principal, service_path: str | None) -> list[str]:
    """The known tools of the server at `service_path` the caller may call, by name (none for a server
    it does not see): the choices of a credential narrowed to that server (token page, consent page)."""
    server = server_seen(principal, service_path) if service_path else None
    if server is None:
        return []
    names = server.tools.order_by("name").values_list("name", flat=True)
    return [name for name in names if principal.allows_mcp(server.path, "tools/call", name)]


def servers_needing_credential(principal: Principal) -> list[Server]:
    """The servers `principal` may use that need each user's own credential (the Connections page)."""
    servers = Server.objects.visible_to(principal).filter(upstream_auth__in=list(USER_CREDENTIAL_MODES))
    return [server for server in servers.order_by("path") if principal.allows_mcp(server.path, "initialize")]


def server_usable(principal: Principal, path: str) -> Server | None:
    """The server at `path` if `principal` sees it and may use it through the gateway, else None."""
    server = server_seen(principal, path)
    return server if server is not None and principal.allows_mcp(server.path, "initialize") else None
