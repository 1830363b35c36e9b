"""/v0.1 and /v0 (the official publishing client still uses /v0) serve the same handlers.

Names arrive URL-encoded (`com.example%2Fweather`); the path converter takes the decoded `/`."""

from django.urls import path, re_path

from catalog.api import server_cards, v01

app_name = "v01"

urlpatterns = []
for prefix in ("v0.1", "v0"):
    suffix = "" if prefix == "v0.1" else "-v0"
    urlpatterns += [
        path(f"{prefix}/servers", v01.ServerListView.as_view(), name=f"servers{suffix}"),
        path(f"{prefix}/publish", v01.PublishView.as_view(), name=f"publish{suffix}"),
        path(
            f"{prefix}/servers/<path:server_name>/versions/<str:version>/status",
            v01.VersionStatusView.as_view(),
            name=f"version-status{suffix}",
        ),
        path(
            f"{prefix}/servers/<path:server_name>/versions/<str:version>",
            v01.ServerVersionView.as_view(),
            name=f"version{suffix}",
        ),
        path(
            f"{prefix}/servers/<path:server_name>/versions",
            v01.ServerVersionsView.as_view(),
            name=f"versions{suffix}",
        ),
        path(
            f"{prefix}/servers/<path:server_name>/status",
            v01.ServerStatusView.as_view(),
            name=f"server-status{suffix}",
        ),
    ]

# The MCP Server Card of each server and virtual server: `<its gateway MCP URL>/server-card`.
urlpatterns.append(
    re_path(
        r"^(?P<path>[a-z0-9_-]+(?:/[a-z0-9_-]+)*)/mcp/server-card$",
        server_cards.ServerCardView.as_view(),
        name="server-card",
    )
)
