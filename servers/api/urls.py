from django.urls import path

from servers.api import views

app_name = "servers-api"

urlpatterns = [
    path("api/internal/list", views.InternalListView.as_view(), name="internal-list"),
]
