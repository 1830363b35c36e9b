from django.urls import path

from connections import views
from connections.oauth.client import CALLBACK_PATH, CLIENT_DOCUMENT_PATH

app_name = "connections"

urlpatterns = [
    path("connections", views.connections_page, name="list"),
    path(CLIENT_DOCUMENT_PATH.lstrip("/"), views.client_document, name="client-document"),
    path(CALLBACK_PATH.lstrip("/"), views.sign_in_callback, name="sign-in-callback"),
    path("connections/<path:service_path>/disconnect", views.disconnect, name="disconnect"),
    path("connections/<path:service_path>", views.connect_page, name="connect"),
]
