"""factory_boy factories for every model the tests build."""

import uuid
from datetime import timedelta

import factory
from django.contrib.auth.models import Group
from django.utils import timezone

from accounts.models import User
from agents.models import Agent
from catalog.models import ServerVersion
from metrics.models import ToolExecutionMetric
from servers.choices import HealthStatus
from servers.models import Server, Tool

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.test")
    password = factory.django.Password(PASSWORD)


class GroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Group
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"group{n}")


class ServerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Server

    path = factory.Sequence(lambda n: f"/server{n}")
    name = factory.Sequence(lambda n: f"Server {n}")
    description = "A test MCP server"
    proxy_pass_url = factory.Sequence(lambda n: f"http://127.0.0.1:{20000 + n}/mcp")
    tags = factory.LazyFunction(lambda: ["test"])
    is_enabled = True
    health_status = factory.LazyAttribute(
        lambda o: HealthStatus.UNKNOWN if o.is_enabled else HealthStatus.DISABLED
    )
    headers = factory.LazyFunction(dict)
    # A server with outbound headers sends them to every caller (servers/upstream_auth.py).
    upstream_auth = factory.LazyAttribute(lambda o: "shared_headers" if o.headers else "none")


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tool

    server = factory.SubFactory(ServerFactory)
    name = factory.Sequence(lambda n: f"tool_{n}")
    description = "Does one thing"
    input_schema = factory.LazyFunction(lambda: {"type": "object", "properties": {}})


class ToolCallFactory(factory.django.DjangoModelFactory):
    """A stored call through the gateway, five minutes ago (a `tool_execution` metric row); `dimensions`
    name its server (an agent's path for its A2A calls)."""

    class Meta:
        model = ToolExecutionMetric

    id = factory.LazyFunction(uuid.uuid4)
    service = "registry"
    timestamp = factory.LazyFunction(lambda: timezone.now() - timedelta(minutes=5))
    value = 1
    duration_ms = 10.0
    success = True
    method = "tools/call"
    tool_name = ""
    dimensions = factory.LazyFunction(lambda: {"server": "/clock"})


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    name = factory.Sequence(lambda n: f"Agent {n}")
    description = "A test A2A agent"
    path = factory.Sequence(lambda n: f"/agent{n}")
    url = factory.Sequence(lambda n: f"http://127.0.0.1:{30000 + n}/")
    version = "1.0.0"
    skills = factory.LazyFunction(
        lambda: [{"name": "summarize", "description": "Summarize text", "input_schema": {"type": "object"}}]
    )
    owner = factory.SubFactory(UserFactory)
    headers = factory.LazyFunction(dict)
    # An agent with outbound headers sends them to every caller, as a server does.
    upstream_auth = factory.LazyAttribute(lambda o: "shared_headers" if o.headers else "none")


def stored_version(
    name: str,
    version: str = "1.0.0",
    *,
    description: str | None = None,
    latest: bool = True,
    status: str = "active",
    message: str = "",
    upstream=None,
    **document,
) -> ServerVersion:
    """A published (or, with `upstream`, mirrored) version stored as is: `document` adds server.json
    fields (title, packages, remotes) to the name, description and version."""
    now = timezone.now()
    description = f"{name} server" if description is None else description
    return ServerVersion.objects.create(
        name=name,
        version=version,
        document={"name": name, "description": description, "version": version} | document,
        description=description,
        status=status,
        status_message=message,
        status_changed_at=now,
        is_latest=latest,
        published_at=now,
        updated_at=now,
        upstream=upstream,
        synced_at=now if upstream else None,
    )
