"""The servers app's JSON API: the dashboard's reads (section C), the internal administration API (section
D, HTTP Basic only), the health API (section F; the websockets are in agents/routing.py) and the public
discovery document."""

from django.urls import path

from servers.api import dashboard, discovery, health, internal

app_name = "servers-api"

urlpatterns = [
    # The dashboard's reads (its writes share their URLs with the pages' forms: servers/urls.py).
    path("api/servers", dashboard.ServerListView.as_view(), name="servers"),
    path(
        "api/server_details/<path:service_path>", dashboard.ServerDetailsView.as_view(), name="server-details"
    ),
    path("api/tools/<path:service_path>", dashboard.ToolsView.as_view(), name="tools"),
    # The internal administration API.
    path("api/internal/register", internal.InternalRegisterView.as_view(), name="internal-register"),
    path("api/internal/remove", internal.InternalRemoveView.as_view(), name="internal-remove"),
    path("api/internal/toggle", internal.InternalToggleView.as_view(), name="internal-toggle"),
    path("api/internal/healthcheck", internal.InternalHealthcheckView.as_view(), name="internal-healthcheck"),
    path("api/internal/list", internal.InternalListView.as_view(), name="internal-list"),
    path(
        "api/internal/create-group", internal.InternalCreateGroupView.as_view(), name="internal-create-group"
    ),
    path(
        "api/internal/delete-group", internal.InternalDeleteGroupView.as_view(), name="internal-delete-group"
    ),
    path("api/internal/list-groups", internal.InternalListGroupsView.as_view(), name="internal-list-groups"),
    # Health.
    path("api/health/ws/stats", health.WebsocketStatsView.as_view(), name="health-ws-stats"),
    # Discovery.
    path(".well-known/mcp-servers", discovery.well_known_mcp_servers, name="discovery"),
]
