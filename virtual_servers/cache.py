"""The per-process cache of virtual servers as the gateway routes them (core/epochs.py): which virtual
server a gateway path names, with its members and the tools their servers are known to offer. Any save
or delete of a virtual server, a member or a skill, and any change of a server that a route holds or its
removal, moves the epoch. Known tools follow tool discovery within the cache's age bound
(EPOCH_CACHE_TTL_SECONDS); the names a session's last list showed are used meanwhile
(gateway/virtual/answers.py)."""

from __future__ import annotations

from django.apps import apps
from django.db.models.signals import m2m_changed, post_delete, post_save

from core.epochs import EpochCache
from servers.cache import LISTINGS

VIRTUALS = EpochCache("virtual-servers", max_entries=1_000)
SERVER_FIELDS = frozenset({"path", "is_enabled", "proxy_pass_url", "headers", "upstream_auth"})
AGENT_FIELDS = frozenset({"path", "is_enabled", "url", "skills", "upstream_auth", "interfaces"})


def _changed(**kwargs) -> None:
    VIRTUALS.bump()


def _definition_changed(**kwargs) -> None:
    """A virtual server's definition changed: its route, and the discovery document that lists it."""
    VIRTUALS.bump()
    LISTINGS.bump()


def _server_saved(sender, instance, update_fields=None, **kwargs) -> None:
    if update_fields is None or set(update_fields) & SERVER_FIELDS:
        VIRTUALS.bump()


def _agent_saved(sender, instance, update_fields=None, **kwargs) -> None:
    if update_fields is None or set(update_fields) & AGENT_FIELDS:
        VIRTUALS.bump()


def connect() -> None:
    """Called once from VirtualServersConfig.ready()."""
    from servers.models import Server
    from skills.models import Skill, SkillVersion
    from virtual_servers.models import VirtualAgent, VirtualMember, VirtualServer

    for model in (VirtualServer, VirtualMember, VirtualAgent):
        post_save.connect(
            _definition_changed, sender=model, dispatch_uid=f"virtual-cache-save-{model.__name__}"
        )
        post_delete.connect(
            _definition_changed, sender=model, dispatch_uid=f"virtual-cache-delete-{model.__name__}"
        )
    m2m_changed.connect(
        _definition_changed, sender=VirtualServer.skills.through, dispatch_uid="virtual-cache-skills"
    )
    for model in (Skill, SkillVersion):  # the skills a virtual server serves (gateway/virtual/skills.py)
        post_save.connect(_changed, sender=model, dispatch_uid=f"virtual-cache-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"virtual-cache-delete-{model.__name__}")
    post_save.connect(_server_saved, sender=Server, dispatch_uid="virtual-cache-server-save")
    agent = apps.get_model("agents", "Agent")  # an agent carried as tools (named, not imported: a layer up)
    post_save.connect(_agent_saved, sender=agent, dispatch_uid="virtual-cache-agent-save")
    post_delete.connect(_changed, sender=agent, dispatch_uid="virtual-cache-agent-delete")
    post_delete.connect(_changed, sender=Server, dispatch_uid="virtual-cache-server-delete")
