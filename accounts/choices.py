from django.db import models

ADMIN_GROUP = "mcp-registry-admin"  # members are admins, as are superusers; nothing else makes one
# With PUBLIC_LISTING, anonymous callers list what this group's scopes let it list (a public grant).
PUBLIC_GROUP = "mcp-registry-public"


class UiPermission(models.TextChoices):
    """Registry actions a scope grants, each for a list of server or agent paths or `all`."""

    LIST_SERVICE = "list_service"
    REGISTER_SERVICE = "register_service"
    TOGGLE_SERVICE = "toggle_service"
    MODIFY_SERVICE = "modify_service"
    HEALTH_CHECK_SERVICE = "health_check_service"
    LIST_AGENTS = "list_agents"
    PUBLISH_AGENT = "publish_agent"
    MODIFY_AGENT = "modify_agent"
    TOGGLE_AGENT = "toggle_agent"
    DELETE_AGENT = "delete_agent"


class AuthMethod(models.TextChoices):
    """How a caller proved who it is."""

    SESSION = "session", "Session (form login)"
    OAUTH = "oauth", "Session (identity provider login)"
    JWT = "jwt", "Registry-issued token"
    OIDC = "oidc", "Identity-provider token"
    BASIC = "basic", "HTTP Basic (internal)"
    APPLICATION = "application", "Authorized application (OAuth)"
    PUBLIC = "public", "Anonymous, with the public grant (PUBLIC_LISTING)"


class TokenKind(models.TextChoices):
    USER = "user", "User token"
    CLIENT_CREDENTIALS = "client_credentials", "Service-account token"


class AuditAction(models.TextChoices):
    """Every mutation the services perform; one row per mutation in AuditEvent."""

    SERVER_CREATE = "server.create", "Server created"
    SERVER_UPDATE = "server.update", "Server updated"
    SERVER_DELETE = "server.delete", "Server deleted"
    TOOL_BLOCK = "tool.block", "Tool blocked"
    TOOL_UNBLOCK = "tool.unblock", "Tool unblocked"
    TOOL_CHANGE_APPROVE = "tool.change_approve", "Tool change approved"
    TOOL_CHANGE_BLOCK = "tool.change_block", "Tool change blocked"
    LIMIT_SET = "limit.set", "Limit set"
    LIMIT_REMOVE = "limit.remove", "Limit removed"
    QUARANTINE = "quarantine.set", "Caller or target quarantined"
    QUARANTINE_LIFT = "quarantine.lift", "Quarantine lifted"
    SERVER_ENABLE = "server.enable", "Server enabled"
    SERVER_DISABLE = "server.disable", "Server disabled"
    AGENT_CREATE = "agent.create", "Agent created"
    AGENT_UPDATE = "agent.update", "Agent updated"
    AGENT_DELETE = "agent.delete", "Agent deleted"
    AGENT_ENABLE = "agent.enable", "Agent enabled"
    AGENT_DISABLE = "agent.disable", "Agent disabled"
    SKILL_PUBLISH = "skill.publish", "Skill version published"
    SKILL_APPROVE = "skill.approve", "Skill version approved"
    SKILL_BLOCK = "skill.block", "Skill version blocked"
    SKILL_DELETE = "skill.delete", "Skill deleted"
    SKILL_UPDATE = "skill.update", "Skill's visibility, groups or tags changed"
    VERSION_PUBLISH = "version.publish", "Server version published"
    VERSION_STATUS = "version.status", "Server version status changed"
    VERSIONS_DETACH = "versions.detach", "Mirrored server detached from its upstream"
    VERSIONS_GATEWAY = "versions.gateway", "Published server put behind the gateway"
    UPSTREAM_CREATE = "upstream.create", "Upstream registry added"
    UPSTREAM_UPDATE = "upstream.update", "Upstream registry changed"
    UPSTREAM_DELETE = "upstream.delete", "Upstream registry removed"
    USER_CREATE = "user.create", "User created"
    USER_UPDATE = "user.update", "User changed"
    USER_DELETE = "user.delete", "User deleted"
    USER_MEMBERSHIPS = "user.memberships", "User's groups or permissions changed"
    USER_GROUPS_SYNC = "user.groups_sync", "User groups synchronised from the identity provider"
    IDP_MAPPING_CREATE = "idp_mapping.create", "Identity-provider group mapped"
    IDP_MAPPING_UPDATE = "idp_mapping.update", "Identity-provider group mapping changed"
    IDP_MAPPING_DELETE = "idp_mapping.delete", "Identity-provider group mapping removed"
    SCOPE_CREATE = "scope.create", "Scope created"
    SCOPE_UPDATE = "scope.update", "Scope updated"
    SCOPE_DELETE = "scope.delete", "Scope deleted"
    SCOPES_IMPORT = "scopes.import", "Scopes imported"
    GROUP_CREATE = "group.create", "Group created"
    GROUP_UPDATE = "group.update", "Group's permissions changed"
    GROUP_DELETE = "group.delete", "Group deleted"
    SCOPE_GROUPS = "scope.groups", "Scope granted to groups or withdrawn"
    GROUP_SERVER_GRANT = "group.server_grant", "Group granted access to a server"
    GROUP_SERVER_REVOKE = "group.server_revoke", "Group's access to a server revoked"
    GROUP_AGENT_GRANT = "group.agent_grant", "Group given an agent"
    GROUP_AGENT_REVOKE = "group.agent_revoke", "Group's agent taken away"
    TOKEN_ISSUE = "token.issue", "Token issued"
    ACCESS_VIEW = "access.view", "Someone's access looked at"
    VIEW_AS_START = "access.view_as", "Console viewed as another user (read only)"
    VIEW_AS_STOP = "access.view_as_stop", "Viewing as another user stopped"
    CONNECTION_CONNECT = "connection.connect", "Upstream credential connected"
    CONNECTION_DISCONNECT = "connection.disconnect", "Upstream credential disconnected"
    CONNECTION_REVOKE = "connection.revoke", "Upstream credential revoked by an administrator"
    CONNECTION_REFRESH_FAILED = "connection.refresh_failed", "Upstream sign-in could not be refreshed"
    CONNECTION_CROSS_APP = "connection.cross_app", "Company identity exchanged for an upstream token"
    CONNECTION_CROSS_APP_REFUSED = (
        "connection.cross_app_refused",
        "Company identity not exchanged for an upstream token",
    )
    VIRTUAL_SERVER_CREATE = "virtual_server.create", "Virtual server created"
    VIRTUAL_SERVER_UPDATE = "virtual_server.update", "Virtual server updated"
    VIRTUAL_SERVER_DELETE = "virtual_server.delete", "Virtual server deleted"
    UPSTREAM_CLIENT_ENTER = "upstream_client.enter", "Registry's client at an upstream entered"
    UPSTREAM_CLIENT_REMOVE = "upstream_client.remove", "Registry's client at an upstream removed"
    CONNECTIONS_PRUNE = "connections.prune", "Upstream credentials no longer usable removed"
    TOKEN_REVOKE = "token.revoke", "Token revoked"
    OAUTH_CONSENT = "oauth.consent", "Application authorized"
    OAUTH_CONSENT_WITHDRAW = "oauth.consent_withdraw", "Application's access withdrawn"
    OAUTH_CLIENT_CREATE = "oauth.client_create", "Application registered in the console"
    OAUTH_CLIENT_UPDATE = "oauth.client_update", "Application changed in the console"
    OAUTH_CLIENT_DELETE = "oauth.client_delete", "Application removed in the console"
    OAUTH_CLIENTS_PURGE = "oauth.clients_purge", "Unused application registrations removed"
    OAUTH_ISSUER_SAVE = "oauth.issuer_save", "Trusted identity provider added or changed"
    OAUTH_ISSUER_DELETE = "oauth.issuer_delete", "Trusted identity provider removed"
    OAUTH_CODE_REPLAY = "oauth.code_replay", "Authorization code replayed: its tokens revoked"
    OAUTH_ASSERTION = "oauth.assertion", "Token issued for an identity provider's assertion (ID-JAG)"
    OAUTH_ASSERTION_REFUSED = "oauth.assertion_refused", "Identity provider's assertion (ID-JAG) refused"
    CREDENTIAL_CREATE = "credential.create", "Client credential created"
    CREDENTIAL_REVOKE = "credential.revoke", "Client credential revoked"
    METRICS_KEY_CREATE = "metrics_key.create", "Metrics API key created"
    METRICS_KEY_UPDATE = "metrics_key.update", "Metrics API key updated"
    METRICS_KEY_REVOKE = "metrics_key.revoke", "Metrics API key revoked"
    RETENTION_CLEANUP = "metrics.retention_cleanup", "Metrics retention applied"
    RETENTION_POLICY_SET = "metrics.retention_policy", "Metrics retention policy changed"


# Groups the registry's own roles rest on; the internal API refuses to delete them.
SYSTEM_GROUPS = frozenset(
    {ADMIN_GROUP, "mcp-registry-user", "mcp-registry-developer", "mcp-registry-operator", PUBLIC_GROUP}
)
GROUP_SCOPE_PREFIX = "group:"  # the scope a group owns is named `group:<group name>`


def group_scope_name(group_name: str) -> str:
    return f"{GROUP_SCOPE_PREFIX}{group_name}"
