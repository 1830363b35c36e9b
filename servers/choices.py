from django.db import models


class HealthStatus(models.TextChoices):
    """The fixed health states of a server; the reason for a state lives in `health_detail`."""

    UNKNOWN = "unknown", "Unknown (never checked)"
    HEALTHY = "healthy", "Healthy"
    HEALTHY_AUTH_EXPIRED = "healthy-auth-expired", "Healthy, but our credentials were refused"
    UNHEALTHY = "unhealthy", "Unhealthy"
    DISABLED = "disabled", "Disabled"


class Transport(models.TextChoices):
    STREAMABLE_HTTP = "streamable-http", "Streamable HTTP"
    SSE = "sse", "Server-sent events"
    STDIO = "stdio", "stdio"


class AuthType(models.TextChoices):
    """How the gateway authenticates to the server (outbound)."""

    NONE = "none", "None"
    BEARER = "bearer", "Bearer token"
    API_KEY = "api_key", "API key"
    OAUTH2 = "oauth2", "OAuth 2"
