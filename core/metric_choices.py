"""The kinds of metric the service accepts and the fixed values of their enumerated dimensions."""

from functools import cache

from django.db import models


class MetricType(models.TextChoices):
    AUTH_REQUEST = "auth_request", "Authentication request"
    TOOL_EXECUTION = "tool_execution", "Tool execution"
    TOOL_DISCOVERY = "tool_discovery", "Tool discovery (semantic search)"
    PROTOCOL_LATENCY = "protocol_latency", "Protocol latency"
    REGISTRY_OPERATION = "registry_operation", "Registry operation"
    HEALTH_CHECK = "health_check", "Health check"
    CUSTOM = "custom", "Custom"


class AuthMethod(models.TextChoices):
    JWT = "jwt", "JWT"
    OAUTH = "oauth", "OAuth"
    NOAUTH = "noauth", "No authentication"


class ToolMethod(models.TextChoices):
    """What a gateway call did: an MCP method, or an A2A one by its family (v1.0 and v0.3 names alike:
    gateway/a2a/metrics.py)."""

    INITIALIZE = "initialize", "initialize"
    TOOLS_LIST = "tools/list", "tools/list"
    TOOLS_CALL = "tools/call", "tools/call"
    A2A_SEND = "message/send", "A2A message/send"
    A2A_STREAM = "message/stream", "A2A message/stream"
    A2A_GET = "tasks/get", "A2A tasks/get"
    A2A_LIST = "tasks/list", "A2A tasks/list"
    A2A_CANCEL = "tasks/cancel", "A2A tasks/cancel"
    A2A_SUBSCRIBE = "tasks/resubscribe", "A2A tasks/resubscribe"
    A2A_PUSH_CONFIG = "tasks/pushConfig", "A2A push-notification configs"
    A2A_EXTENDED_CARD = "agent/extendedCard", "A2A extended card"


class FlowStep(models.TextChoices):
    """Time between two protocol steps of one client session."""

    DISCOVERY = "discovery", "initialize to tools/list"
    SELECTION = "selection", "tools/list to tools/call"
    FULL_FLOW = "full_flow", "initialize to tools/call"


@cache
def values_of(choices: type[models.TextChoices]) -> frozenset[str]:
    """The values of `choices` as a set, built once (Django computes `.values` anew on every access, which
    showed in ingestion profiles: it is checked for every metric)."""
    return frozenset(choices.values)
