"""Dashboard pages, under `/api` (section C) and unprefixed (section H)."""

from django.urls import path

from servers import views

app_name = "servers"

urlpatterns = [
    path("", views.dashboard, name="home"),
    path("api/", views.dashboard, name="home-api"),
    path("status", views.status, name="status"),
    path("api/edit/<path:service_path>", views.edit, name="edit"),
    path("edit/<path:service_path>", views.edit, name="edit-unprefixed"),
]
