"""The dashboard's JSON API under `/api` (section C) and its unprefixed forms (section H).

Toggle, register and refresh are also what the dashboard's forms post to: a browser's form post gets the
page behaviour (flash message and redirect), every other client the JSON answer.
"""

from django.urls import path

from servers import views
from servers.api import dashboard

app_name = "servers-dashboard"

toggle = views.form_or_json(dashboard.ToggleView.as_view(), views.toggle_form)
register = views.form_or_json(dashboard.RegisterView.as_view(), views.register_form)
refresh = views.form_or_json(dashboard.RefreshView.as_view(), views.refresh_form)

urlpatterns = [
    path("api/servers", dashboard.ServerListView.as_view(), name="servers"),
    path("api/toggle/<path:service_path>", toggle, name="toggle"),
    path("toggle/<path:service_path>", toggle, name="toggle-unprefixed"),
    path("api/register", register, name="register"),
    path("register", register, name="register-unprefixed"),
    path(
        "api/server_details/<path:service_path>", dashboard.ServerDetailsView.as_view(), name="server-details"
    ),
    path("api/tools/<path:service_path>", dashboard.ToolsView.as_view(), name="tools"),
    path("api/refresh/<path:service_path>", refresh, name="refresh"),
]
