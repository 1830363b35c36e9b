from django.db import models


class HealthStatus(models.TextChoices):
    """The fixed health states of a server; the reason for a state lives in `health_detail`."""

    UNKNOWN = "unknown", "Unknown (never checked)"
    HEALTHY = "healthy", "Healthy"
    AUTH_REFUSED = "auth-refused", "Credentials refused"
    NEEDS_CONNECTION = "needs-connection", "Needs a discovery connection"
    UNHEALTHY = "unhealthy", "Unhealthy"
    DISABLED = "disabled", "Disabled"


# What each state means, said once: the dashboard's legend and docs/registry.md show these words.
HEALTH_MEANINGS = {
    HealthStatus.UNKNOWN: "Not checked yet; the first check runs seconds after the server is registered or "
    "enabled.",
    HealthStatus.HEALTHY: "The last check completed an MCP exchange with the server: `initialize` and "
    "`tools/list` were answered.",
    HealthStatus.AUTH_REFUSED: "The server answered 401 or 403: it refused the gateway's credentials, or "
    "asked for some and none are configured. Not healthy; the reason says which.",
    HealthStatus.NEEDS_CONNECTION: "The server needs each user's own credential, and no administrator has "
    "made the discovery connection the registry checks it and lists its tools with. Not counted as "
    "unhealthy.",
    HealthStatus.UNHEALTHY: "The last check failed: no connection, a timeout, an HTTP error, or an answer "
    "that is not MCP. The reason says which; it is checked again sooner than the others.",
    HealthStatus.DISABLED: "Switched off by an operator: not checked, and not reachable through the gateway.",
}
# The states counted, filtered and checked again early as "not healthy".
NOT_HEALTHY = (HealthStatus.AUTH_REFUSED, HealthStatus.UNHEALTHY)
# The states whose reason is shown beside them (what is wrong, or what to do).
DETAILED = (*NOT_HEALTHY, HealthStatus.NEEDS_CONNECTION)


class PinSubject(models.TextChoices):
    """What a pin or a change is about: a tool, or a prompt (servers/pins.py)."""

    TOOL = "tool", "Tool"
    PROMPT = "prompt", "Prompt"


class ToolChangeKind(models.TextChoices):
    ADDED = "added", "Added"
    CHANGED = "changed", "Changed"
    REMOVED = "removed", "Removed"


class ToolChangeStatus(models.TextChoices):
    PENDING = "pending", "Awaiting approval"
    APPROVED = "approved", "Approved"
    BLOCKED = "blocked", "Blocked"


class ToolChangeSeenIn(models.TextChoices):
    DISCOVERY = "discovery", "Tool discovery"
    GATEWAY = "gateway", "A live list through the gateway"


class Transport(models.TextChoices):
    STREAMABLE_HTTP = "streamable-http", "Streamable HTTP"
    SSE = "sse", "Server-sent events"
    STDIO = "stdio", "stdio"


class UpstreamAuth(models.TextChoices):
    """Where the gateway's credentials to a server or an agent come from (servers/upstream_auth.py)."""

    NONE = "none", "None"
    SHARED_HEADERS = "shared_headers", "Shared headers (one credential for every caller)"
    USER_SECRET = "user_secret", "Each user's own secret (API key or personal access token)"
    USER_OAUTH = "user_oauth", "Each user's own sign-in at the target (OAuth)"
    CROSS_APP_ACCESS = (
        "cross_app_access",
        "Each user's company identity, exchanged at the identity provider (cross-app access, ID-JAG)",
    )


USER_CREDENTIAL_MODES = frozenset({UpstreamAuth.USER_SECRET, UpstreamAuth.USER_OAUTH})
# The modes whose credential is an access token the target's authorization server issued for the user:
# refused with a 401, it is obtained again once (connections/resolver.py, gateway/sign_in.py).
SIGN_IN_MODES = frozenset({UpstreamAuth.USER_OAUTH, UpstreamAuth.CROSS_APP_ACCESS})


class AuthType(models.TextChoices):
    """How the gateway authenticates to the server (outbound)."""

    NONE = "none", "None"
    BEARER = "bearer", "Bearer token"
    API_KEY = "api_key", "API key"
    OAUTH2 = "oauth2", "OAuth 2"
