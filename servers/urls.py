"""The servers app's pages, under `/api` (section C) and unprefixed (section H).

Toggle, register and refresh are also JSON endpoints at the same URLs: a browser's form post gets the
page behaviour (flash message and redirect), every other client the JSON answer of servers/api/."""

from django.urls import path

from servers import server_page, views
from servers.api import dashboard

app_name = "servers"

toggle = views.form_or_json(dashboard.ToggleView.as_view(), views.toggle_form)
register = views.form_or_json(dashboard.RegisterView.as_view(), views.register_form)
refresh = views.form_or_json(dashboard.RefreshView.as_view(), views.refresh_form)

urlpatterns = [
    path("", views.dashboard, name="home"),
    path("api/", views.dashboard, name="home-api"),
    path("status", views.status, name="status"),
    path("servers/<path:service_path>", server_page.server_page, name="server"),
    path("api/edit/<path:service_path>", views.edit, name="edit"),
    path("edit/<path:service_path>", views.edit, name="edit-unprefixed"),
    path("api/toggle/<path:service_path>", toggle, name="toggle"),
    path("toggle/<path:service_path>", toggle, name="toggle-unprefixed"),
    path("api/register", register, name="register"),
    path("register", register, name="register-unprefixed"),
    path("api/refresh/<path:service_path>", refresh, name="refresh"),
]
