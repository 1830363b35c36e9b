"""Who is asking, and what their scopes allow: the one permission model of every surface.

A `Principal` is resolved per request from a verified session, token or Basic credential (never from
client-sent identity headers). Scope definitions are read at request time, so editing a scope in the
admin changes what existing sessions and tokens may do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase

from django.contrib.auth.models import Group
from django.db.models import Prefetch

from accounts.choices import ADMIN_GROUP, PUBLIC_GROUP, AuthMethod, UiPermission
from accounts.models import IdpGroupMapping, Scope, User
from accounts.reach import Reach
from core.tool_trust import ToolTrust
from core.validators import normalize_path

ALL = "all"
ANY = "*"
TOOLS_CALL = "tools/call"
REGISTRY = "registry"  # the audience of a token for the registry's own APIs (else a server path)


def _as_list(value) -> list:
    if value == ANY or value == ALL:
        return [ANY]
    if isinstance(value, str):
        return [value]
    return list(value or [])


@dataclass(frozen=True)
class ServerRule:
    """May call `methods` (and, for tools/call, `tools`) on `server` ("*" = any)."""

    server: str
    methods: frozenset[str]
    tools: frozenset[str]

    @classmethod
    def from_dict(cls, raw: dict) -> ServerRule:
        return cls(
            server=normalize_path(raw.get("server", "")) if raw.get("server") not in (ANY, ALL) else ANY,
            methods=frozenset(_as_list(raw.get("methods"))),
            tools=frozenset(_as_list(raw.get("tools"))),
        )

    def matches(self, server_path: str, method: str, tool: str | None) -> bool:
        if self.server != ANY and self.server != server_path:
            return False
        if ANY not in self.methods and method not in self.methods:
            return False
        if method == TOOLS_CALL:
            return ANY in self.tools or (tool is not None and tool in self.tools)
        return True

    def matches_other(self, server_path: str, method: str) -> bool:
        """A method outside the MCP specification: named by this rule, or every method and tool granted."""
        if self.server != ANY and self.server != server_path:
            return False
        return method in self.methods or (ANY in self.methods and ANY in self.tools)


@dataclass(frozen=True)
class Principal:
    """A verified caller with its groups, scopes and the permissions they add up to."""

    username: str
    auth_method: str | None
    user: User | None = None
    provider: str | None = None
    client_id: str | None = None
    token_jti: str | None = None  # the registry token this caller presented, if any
    # An authorized application's token (oauth/) works only where it was issued for: `audience` is a
    # server path or "registry" (oauth/resources.py), `oauth_scopes` the OAuth scopes it carries.
    audience: str | None = None
    oauth_scopes: frozenset[str] | None = None
    email: str = ""
    groups: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    is_admin: bool = False
    server_rules: tuple[ServerRule, ...] = ()
    ui: dict[str, frozenset[str]] = field(default_factory=dict)
    publish_names: tuple[str, ...] = ()  # server.json name patterns (accounts/scope_rules.py)
    reach: Reach | None = None  # what the presented credential is narrowed to (accounts/reach.py)
    viewed_by: str = ""  # the administrator viewing the console as this user, read only (accounts/view_as.py)
    # Server path -> the tools operators withhold from everyone (core/tool_trust.py); the gateway sets it.
    trust: Mapping[str, ToolTrust] = field(default_factory=dict)

    @property
    def is_authenticated(self) -> bool:
        return self.auth_method is not None

    @property
    def pk(self):
        return self.user.pk if self.user is not None else None

    def get_username(self) -> str:
        return self.username

    def bound_elsewhere(self, audience: str | None) -> bool:
        """Is this caller's token bound to a resource other than `audience` (a server path, "registry")?"""
        return self.audience is not None and self.audience != audience

    def lacks_oauth_scope(self, scope: str) -> bool:
        """Does this caller's token come from an authorization that did not grant OAuth `scope`?"""
        return self.oauth_scopes is not None and scope not in self.oauth_scopes

    def can(self, permission: UiPermission | str, path: str | None = None) -> bool:
        """May this caller do `permission` on `path` (or on anything, when no path is given)?"""
        if self.is_admin:
            return True
        granted = self.ui.get(str(permission), frozenset())
        if ALL in granted:
            return True
        if path is None:
            return bool(granted)
        return normalize_path(path) in granted

    def can_everywhere(self, permission: UiPermission | str) -> bool:
        """Granted `permission` on `all` (or an admin): for every path, of servers and agents alike."""
        return self.is_admin or ALL in self.ui.get(str(permission), frozenset())

    def allows_mcp(self, server_path: str, method: str, tool: str | None = None) -> bool:
        """May this caller send MCP `method` (for tools/call: to `tool`) to the server at `server_path`?
        A tool an operator withholds (`trust`) is refused to everyone, administrators included."""
        if self.trust and self.tool_refusal(server_path, tool) is not None:
            return False
        if self.is_admin:
            return True
        path = normalize_path(server_path)
        return any(rule.matches(path, method, tool) for rule in self.server_rules)

    def tool_refusal(self, server_path: str, tool: str | None, shown_as: str | None = None) -> str | None:
        """Why `tool` of the server at `server_path` is withheld from everyone (naming it `shown_as`, when
        the caller knows it by another name), or None."""
        trust = self.trust.get(server_path) if tool is not None else None
        return None if trust is None else trust.refusal(tool, shown_as)

    def prompt_refusal(self, server_path: str, prompt: str | None, shown_as: str | None = None) -> str | None:
        """Why `prompts/get` of `prompt` of the server at `server_path` is withheld from everyone, or None."""
        trust = self.trust.get(server_path) if prompt is not None else None
        return None if trust is None else trust.prompt_refusal(prompt, shown_as)

    def with_trust(self, trust: Mapping[str, ToolTrust]) -> Principal:
        """This principal, knowing what operators withhold (the same object when nothing is)."""
        return replace(self, trust=trust) if trust else self

    def shown_tools(self, server_path: str) -> frozenset[str] | None:
        """The tools of the server at `server_path` this caller is shown, None for all of them: the rule
        of every surface that shows tools (the gateway's tools/list, the dashboard, the tools API, search).

        Where the caller's tool rules reach the server, it is shown exactly the tools they let it call;
        a caller who sees the server with no tool rule on it (a `list_service` reader) sees its tools
        as the catalogue describes them, and calls none."""
        if self.is_admin:
            return None
        path, names, narrowed = normalize_path(server_path), set(), False
        for rule in self.tool_rules():
            if rule.server in (ANY, path):
                if ANY in rule.tools:
                    return None
                names, narrowed = names | rule.tools, True
        return frozenset(names) if narrowed else None

    def tool_rules(self) -> tuple[ServerRule, ...]:
        """The rules that grant tools/call (on which servers, to which tools); admins need none."""
        return tuple(rule for rule in self.server_rules if ANY in rule.methods or TOOLS_CALL in rule.methods)

    def tools_view(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """What decides which tools this caller is shown (its tool rules; none for admins), as a key for
        caches of what it is shown: callers with the same view are shown the same tools."""
        if self.is_admin:
            return ()
        return tuple(sorted((rule.server, tuple(sorted(rule.tools))) for rule in self.tool_rules()))

    def allows_other_mcp(self, server_path: str, method: str) -> bool:
        """May this caller send `method`, a method outside the MCP specification (gateway/jsonrpc.py)?"""
        if self.is_admin:
            return True
        path = normalize_path(server_path)
        return any(rule.matches_other(path, method) for rule in self.server_rules)

    def may_publish(self, name: str) -> bool:
        """May this caller publish versions of the server.json `name`, and change their status?"""
        if self.is_admin:
            return True
        return any(fnmatchcase(name, pattern) for pattern in self.publish_names)

    def server_visibility(self) -> tuple[bool, frozenset[str]]:
        """(sees every server, else the paths it sees): listing or any MCP rule on a server shows it."""
        if self.is_admin or ALL in self.ui.get(UiPermission.LIST_SERVICE, ()):
            return True, frozenset()
        if any(rule.server == ANY for rule in self.server_rules):
            return True, frozenset()
        paths = set(self.ui.get(UiPermission.LIST_SERVICE, ()))
        paths.update(rule.server for rule in self.server_rules)
        return False, frozenset(paths)


ANONYMOUS = Principal(username="", auth_method=None)


# -- a credential narrowed to a reach (accounts/reach.py) ------------------------------------------------


def _meet(granted: frozenset[str], wanted: frozenset[str]) -> frozenset[str]:
    if ANY in granted:
        return wanted
    if ANY in wanted:
        return granted
    return granted & wanted


def narrowed(principal: Principal, reach: Reach) -> Principal:
    """`principal` as seen through `reach`: its rules cut down to the reach's server and tools, no
    administration, no console permission but listing what it reaches, no publishing."""
    everything = (ServerRule(ANY, frozenset({ANY}), frozenset({ANY})),)
    base = everything if principal.is_admin else principal.server_rules
    rules = []
    for rule in base:
        if not reach.server or (reach.server != ANY and rule.server not in (ANY, reach.server)):
            continue
        server = rule.server if reach.server == ANY else reach.server
        rules.append(ServerRule(server, rule.methods, _meet(rule.tools, reach.tools)))
    return replace(
        principal,
        is_admin=False,
        server_rules=tuple(rules),
        ui=_reads_within(principal, reach),
        publish_names=(),
        reach=reach,
    )


def _reads_within(principal: Principal, reach: Reach) -> dict[str, frozenset[str]]:
    """The console permissions a narrowed credential keeps: listing, of what its reach covers (every
    server reach keeps the agents listing too); never a change."""
    reads = (
        (UiPermission.LIST_SERVICE, UiPermission.LIST_AGENTS)
        if reach.server == ANY
        else (UiPermission.LIST_SERVICE,)
    )
    ui = {}
    for permission in reads:
        granted = frozenset({ALL}) if principal.is_admin else principal.ui.get(str(permission), frozenset())
        if reach.server != ANY:
            granted = frozenset({reach.server}) if ALL in granted or reach.server in granted else frozenset()
        if granted and reach.server:
            ui[str(permission)] = granted
    return ui


def _publish_names(scopes: Iterable[Scope]) -> tuple[str, ...]:
    names = {
        pattern for scope in scopes for pattern in (scope.publish_names or []) if isinstance(pattern, str)
    }
    return tuple(sorted(names))


def _permissions(scopes: Iterable[Scope]) -> tuple[tuple[ServerRule, ...], dict[str, frozenset[str]]]:
    rules: list[ServerRule] = []
    ui: dict[str, set[str]] = {}
    for scope in scopes:
        rules.extend(ServerRule.from_dict(raw) for raw in scope.server_rules if isinstance(raw, dict))
        for permission, paths in (scope.ui_permissions or {}).items():
            ui.setdefault(permission, set()).update(normalize_path(p) for p in _as_list(paths))
    ui = {name: {ALL if p == ANY else p for p in paths} for name, paths in ui.items()}
    return tuple(rules), {name: frozenset(paths) for name, paths in ui.items()}


def _granted(scopes: list[Scope], **identity) -> Principal:
    """A Principal holding what `scopes` grant (rules, console permissions, publish names); `identity`
    says who it is."""
    rules, ui = _permissions(scopes)
    return Principal(
        scopes=tuple(scope.name for scope in scopes),
        server_rules=rules,
        ui=ui,
        publish_names=_publish_names(scopes),
        **identity,
    )


def principal_for_user(
    user: User,
    *,
    auth_method: str,
    provider: str | None = None,
    client_id: str | None = None,
    token_scopes: Iterable[str] | None = None,
    token_admin: bool = True,
    reach: Reach | None = None,
) -> Principal:
    """A user's principal. With `token_scopes`, only those of the user's current scopes apply, and admin
    applies only when the token was issued unrestricted (`token_admin`) and the user is still admin.
    With a `reach`, the user's current rights (an administrator's included) are narrowed to it."""
    group_names = sorted(user.groups.values_list("name", flat=True))
    scopes = list(Scope.objects.filter(groups__user=user).distinct().order_by("name"))
    if token_scopes is not None:
        wanted = set(token_scopes)
        scopes = [scope for scope in scopes if scope.name in wanted]
    is_admin = user.is_active and (user.is_superuser or ADMIN_GROUP in group_names)
    principal = _granted(
        scopes,
        username=user.get_username(),
        auth_method=auth_method,
        user=user,
        provider=provider,
        client_id=client_id,
        email=user.email,
        groups=tuple(group_names),
        # A reach narrows an administrator's rights, unless the credential has chosen scopes to narrow.
        is_admin=is_admin and (token_admin or (reach is not None and token_scopes is None)),
    )
    return narrowed(principal, reach) if reach is not None else principal


def principal_for_idp_groups(
    *, username: str, idp_groups: Iterable[str], provider: str, client_id: str | None, email: str = ""
) -> Principal:
    """A caller known only by an identity provider's token: its groups claim maps to registry groups."""
    mapped = IdpGroupMapping.objects.filter(idp_group__in=list(idp_groups))
    group_names = sorted(set(mapped.values_list("group__name", flat=True)))
    scopes = list(Scope.objects.filter(groups__name__in=group_names).distinct().order_by("name"))
    return _granted(
        scopes,
        username=username,
        auth_method=AuthMethod.OIDC,
        provider=provider,
        client_id=client_id,
        email=email,
        groups=tuple(group_names),
        is_admin=ADMIN_GROUP in group_names,
    )


def principal_for_groups(group_names: Iterable[str]) -> Principal:
    """What a member of exactly these registry groups may do (the console's effective-access view)."""
    names = sorted(set(group_names))
    scopes = list(Scope.objects.filter(groups__name__in=names).distinct().order_by("name"))
    return _of_groups(names, scopes)


def principal_of_each_group() -> list[Principal]:
    """What a member of each registry group alone may do, by group name, in two queries."""
    groups = Group.objects.order_by("name").prefetch_related(
        Prefetch("scopes", queryset=Scope.objects.order_by("name"))
    )
    return [_of_groups([group.name], list(group.scopes.all())) for group in groups]


def _of_groups(names: list[str], scopes: list[Scope]) -> Principal:
    return _granted(
        scopes,
        username=f"group:{','.join(names)}",
        auth_method=AuthMethod.SESSION,
        groups=tuple(names),
        is_admin=ADMIN_GROUP in names,
    )


def principal_for_public() -> Principal:
    """The anonymous caller of a listing when PUBLIC_LISTING is on: it lists the servers the scopes of
    the public group let it list (a public grant), and may do nothing else."""
    scopes = list(Scope.objects.filter(groups__name=PUBLIC_GROUP).distinct().order_by("name"))
    _, ui = _permissions(scopes)
    listed = ui.get(UiPermission.LIST_SERVICE, frozenset())
    return Principal(
        username="",
        auth_method=AuthMethod.PUBLIC,
        groups=(PUBLIC_GROUP,),
        scopes=tuple(scope.name for scope in scopes),
        ui={UiPermission.LIST_SERVICE: listed} if listed else {},
    )
