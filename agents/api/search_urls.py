"""Semantic search routes, included before `agents.api.urls` so `api/agents/discover/semantic` is not
taken for an agent path."""

from django.urls import path

from agents.api import search

app_name = "agents-search"

urlpatterns = [
    path("api/agents/discover/semantic", search.AgentSemanticSearchView.as_view(), name="agents-semantic"),
    path("api/search/semantic", search.RegistrySemanticSearchView.as_view(), name="registry-semantic"),
]
