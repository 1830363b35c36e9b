from django.urls import path

from virtual_servers.api import views

app_name = "virtual-servers-api"

urlpatterns = [
    path("api/virtual-servers", views.VirtualServerListView.as_view(), name="list"),
    path("api/virtual-servers/<path:virtual_path>", views.VirtualServerDetailView.as_view(), name="detail"),
    path("api/internal/virtual-servers", views.InternalVirtualServerListView.as_view(), name="internal-list"),
    path(
        "api/internal/virtual-servers/<path:virtual_path>",
        views.InternalVirtualServerDetailView.as_view(),
        name="internal-detail",
    ),
]
