"""/v0.1 and /v0 (the official publishing client still uses /v0) serve the same handlers.

Names arrive URL-encoded (`io.mcpgateway%2Fcurrenttime`); the path converter takes the decoded `/`."""

from django.urls import path

from servers.api import v01

app_name = "v01"

urlpatterns = []
for prefix in ("v0.1", "v0"):
    suffix = "" if prefix == "v0.1" else "-v0"
    urlpatterns += [
        path(f"{prefix}/servers", v01.ServerListView.as_view(), name=f"servers{suffix}"),
        path(
            f"{prefix}/servers/<path:server_name>/versions",
            v01.ServerVersionsView.as_view(),
            name=f"versions{suffix}",
        ),
        path(
            f"{prefix}/servers/<path:server_name>/versions/<str:version>",
            v01.ServerVersionsView.as_view(),
            name=f"version{suffix}",
        ),
    ]
