from django.urls import include, path

app_name = "servers-api"

urlpatterns = [
    path("", include("servers.api.internal_urls")),
]
