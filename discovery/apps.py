from django.apps import AppConfig


class DiscoveryConfig(AppConfig):
    """The discovery documents of the ecosystem's standards over servers, virtual servers and agents
    together (the AI Catalog), each per the caller's rights; per-server and per-agent cards live with
    their apps (catalog/server_cards.py, agents/cards.py)."""

    name = "discovery"
