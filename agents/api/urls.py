"""The agent API. `register` and `discover` come before the `{path}` routes, and `{path}/toggle` before
the plain `{path}` (paths ending in /toggle, and /register and /discover, are reserved for agents);
`discover/semantic` is search's (search/api/urls.py, mounted before these)."""

from django.urls import path

from agents.api import health, internal, views

app_name = "agents-api"

urlpatterns = [
    # The health websockets' snapshot over HTTP (servers and agents; the websockets: agents/routing.py).
    path("api/health/ws/health_status", health.HealthSnapshotView.as_view(), name="health-snapshot"),
    path("api/agents", views.AgentListView.as_view(), name="list"),
    # The internal API's group grants: servers, virtual servers and agents (agents/api/internal.py).
    path(
        "api/internal/add-to-groups",
        internal.InternalAddToGroupsView.as_view(),
        name="internal-add-to-groups",
    ),
    path(
        "api/internal/remove-from-groups",
        internal.InternalRemoveFromGroupsView.as_view(),
        name="internal-remove-from-groups",
    ),
    path("api/agents/register", views.AgentRegisterView.as_view(), name="register"),
    path("api/agents/discover", views.AgentDiscoverView.as_view(), name="discover"),
    path("api/agents/<path:agent_path>/toggle", views.AgentToggleView.as_view(), name="toggle"),
    path("api/agents/<path:agent_path>", views.AgentDetailView.as_view(), name="detail"),
]
