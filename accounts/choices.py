from django.db import models


class AuditAction(models.TextChoices):
    """Every mutation the services perform; one row per mutation in AuditEvent."""

    SERVER_CREATE = "server.create", "Server created"
    SERVER_UPDATE = "server.update", "Server updated"
    SERVER_DELETE = "server.delete", "Server deleted"
    SERVER_ENABLE = "server.enable", "Server enabled"
    SERVER_DISABLE = "server.disable", "Server disabled"
    AGENT_CREATE = "agent.create", "Agent created"
    AGENT_UPDATE = "agent.update", "Agent updated"
    AGENT_DELETE = "agent.delete", "Agent deleted"
    AGENT_ENABLE = "agent.enable", "Agent enabled"
    AGENT_DISABLE = "agent.disable", "Agent disabled"
    USER_CREATE = "user.create", "User created"
    SCOPE_CREATE = "scope.create", "Scope created"
    SCOPE_UPDATE = "scope.update", "Scope updated"
    SCOPE_DELETE = "scope.delete", "Scope deleted"
