from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import HnswIndex, VectorField

from agents.choices import Provider, Visibility
from agents.querysets import AgentQuerySet
from core.targets import TargetKind
from core.validators import PATH_MAX_LENGTH, validate_registry_path
from servers.choices import HealthStatus
from servers.models import HealthChange
from servers.shared_headers import UpstreamAuthFields

EMBEDDING_DIMENSIONS = 384  # all-MiniLM-L6-v2


# The A2A card's protocol fields as an agent stores them: the services' editable fields, the API's
# card and the admin's form list them from here.
CARD_PROTOCOL_FIELDS = (
    "protocol_version",
    "preferred_transport",
    "interfaces",
    "capabilities",
    "default_input_modes",
    "default_output_modes",
    "documentation_url",
    "icon_url",
    "security_schemes",
    "security_requirements",
)


class Agent(UpstreamAuthFields):
    """An A2A agent card published to the registry, with its owner and visibility.

    The card keeps what an A2A v1.0 (or v0.3) card carries, so the registry can serve the card back
    faithfully (`?format=a2a`): interfaces, capabilities, I/O modes, security schemes and requirements.
    `embedding` is computed out of band: saves set `embedding_dirty` and a task embeds dirty rows.
    `upstream_auth` says whose credential the gateway sends the agent, as for servers: none, the
    operator's shared `headers` (sealed at rest, also sent by the health check; no response and no console
    page shows their values), or each user's own (servers/shared_headers.py). A card published with JWS
    `signatures` is kept as it came in `signed_card` and served as it is (a rewrite would break them).
    """

    TARGET_KIND = TargetKind.AGENT
    UPSTREAM_URL_FIELD = "url"
    SECRET_FIELDS = ("sealed_headers",)  # never filtered, searched, sorted or shown (core/admin.py)

    name = models.CharField(max_length=200)
    description = models.TextField()
    path = models.CharField(max_length=PATH_MAX_LENGTH, unique=True, validators=[validate_registry_path])
    url = models.URLField(max_length=2048)
    version = models.CharField(max_length=100)
    provider = models.CharField(max_length=100, choices=Provider.choices, blank=True)
    # A2A `provider {organization, url}`, kept verbatim; `provider` above is its vendor key.
    provider_organization = models.CharField(max_length=200, blank=True)
    provider_url = models.URLField(max_length=2048, blank=True)
    # A2A protocol version of the main `url` (v0.3 `protocolVersion`; v1.0: of the first interface).
    protocol_version = models.CharField(max_length=20, blank=True)
    # Transport of the main `url` (v0.3 `preferredTransport`); empty means A2A's default, JSONRPC.
    preferred_transport = models.CharField(max_length=32, blank=True)
    # Every other endpoint: [{url, protocol_binding, protocol_version?, tenant?}].
    interfaces = models.JSONField(default=list, blank=True)
    # {streaming?, push_notifications?, extended_agent_card?, extensions?: [{uri, ...}]}
    capabilities = models.JSONField(default=dict, blank=True)
    default_input_modes = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    default_output_modes = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    documentation_url = models.URLField(max_length=2048, blank=True)
    icon_url = models.URLField(max_length=2048, blank=True)
    security_schemes = models.JSONField(default=dict, blank=True)
    # OR of ANDs, as in OpenAPI: [{scheme name: [scopes]}].
    security_requirements = models.JSONField(default=list, blank=True)
    skills = models.JSONField(default=list, blank=True)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PUBLIC, db_index=True
    )
    license = models.CharField(max_length=100, blank=True, default="N/A")
    is_enabled = models.BooleanField(default=False, db_index=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="agents"
    )
    groups = models.ManyToManyField(
        Group, blank=True, related_name="agents", help_text="groups that see an internal agent"
    )
    signed_card = models.JSONField(null=True, blank=True)
    # Health as for servers (agents/health.py): the card fetched and the main interface answered.
    health_status = models.CharField(
        max_length=32, choices=HealthStatus.choices, default=HealthStatus.UNKNOWN, db_index=True
    )
    health_detail = models.TextField(blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    unhealthy_since = models.DateTimeField(null=True, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_dirty = models.BooleanField(default=True, db_index=True)
    registered_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["path"]
        indexes = [
            HnswIndex(
                name="agent_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def num_skills(self) -> int:
        return len(self.skills) if isinstance(self.skills, list) else 0


class AgentHealthTransition(HealthChange):
    """One change of an agent's health status, as HealthTransition is for servers."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="health_transitions")

    class Meta:
        ordering = ["agent_id", "at", "id"]
        indexes = [models.Index(fields=["agent", "at"], name="agent_health_transition_at")]

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.from_status} → {self.to_status}"
