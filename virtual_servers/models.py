from django.conf import settings
from django.db import models

from core.validators import PATH_MAX_LENGTH, validate_registry_path


class VirtualServer(models.Model):
    """One MCP URL of the gateway (`<gateway>/<path>/mcp`) carrying what its members choose of their
    servers, and the registry's skills it serves. Its path shares the namespace of server paths: no server
    may hold it too."""

    path = models.CharField(max_length=PATH_MAX_LENGTH, unique=True, validators=[validate_registry_path])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    is_enabled = models.BooleanField(default=True)
    tool_search = models.BooleanField(
        default=False,
        help_text="lists search_tools and call_tool instead of every tool (gateway/virtual/search.py)",
    )
    a2a = models.BooleanField(
        default=False,
        help_text="also an A2A agent at /<path>/a2a, one skill per tool (gateway/virtual/a2a.py)",
    )
    skills = models.ManyToManyField(
        "skills.Skill",
        blank=True,
        related_name="virtual_servers",
        help_text="skills it serves by the MCP skills extension (gateway/virtual/skills.py)",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return self.path


class VirtualMember(models.Model):
    """A server a virtual server carries, and what of it: `tools`, `prompts` and `resources` are each
    `{}` (all), `{"include": [...]}` or `{"exclude": [...]}` (tool and prompt names, resource URIs);
    `tool_settings` maps a tool's own name to its `alias`, `description` and `fixed` arguments
    (virtual_servers/rules.py). `key` names the member in the resource URIs clients see."""

    virtual = models.ForeignKey(VirtualServer, on_delete=models.CASCADE, related_name="members")
    server = models.ForeignKey("servers.Server", on_delete=models.CASCADE, related_name="virtual_memberships")
    key = models.CharField(max_length=40)
    position = models.PositiveIntegerField(default=0)
    tools = models.JSONField(default=dict, blank=True)
    prompts = models.JSONField(default=dict, blank=True)
    resources = models.JSONField(default=dict, blank=True)
    tool_settings = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["virtual_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["virtual", "server"], name="virtual_member_once"),
            models.UniqueConstraint(fields=["virtual", "key"], name="virtual_member_key_once"),
        ]

    def __str__(self) -> str:
        return f"{self.virtual} ← {self.server}"


class VirtualAgent(models.Model):
    """An A2A agent a virtual server carries as MCP tools: one per skill of its card, named
    `<key>__<skill id>` (gateway/virtual/agent_tools.py). The caller's rights are the agent's: who may not
    message it does not see its tools."""

    virtual = models.ForeignKey(VirtualServer, on_delete=models.CASCADE, related_name="agent_members")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="virtual_memberships")
    key = models.CharField(max_length=40)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["virtual_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["virtual", "agent"], name="virtual_agent_once"),
            models.UniqueConstraint(fields=["virtual", "key"], name="virtual_agent_key_once"),
        ]

    def __str__(self) -> str:
        return f"{self.virtual} ← {self.agent_id}"
