"""Root URLs: each app owns its pages (`urls.py`) and its JSON API (`api/urls.py`)."""

from django.contrib import admin
from django.urls import path

from registry_site import views

urlpatterns = [
    path("health", views.health, name="health"),
    path("admin/", admin.site.urls),
]
