from django.urls import path

from connections import views

app_name = "connections"

urlpatterns = [
    path("connections", views.connections_page, name="list"),
    path("connections/<path:service_path>/disconnect", views.disconnect, name="disconnect"),
    path("connections/<path:service_path>", views.connect_page, name="connect"),
]
