"""The semantic search API: agents alone (interface section B) and the whole registry. Mounted before the
agent API, whose `api/agents/{path}` would otherwise take `discover/semantic` for an agent's path."""

from django.urls import path

from search.api import views

app_name = "search-api"

urlpatterns = [
    path("api/agents/discover/semantic", views.AgentSemanticSearchView.as_view(), name="agents-semantic"),
    path("api/search/semantic", views.RegistrySemanticSearchView.as_view(), name="registry-semantic"),
]
