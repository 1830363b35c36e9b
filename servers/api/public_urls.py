from django.urls import path

from servers.api import discovery

app_name = "servers-public"

urlpatterns = [
    path(".well-known/mcp-servers", discovery.well_known_mcp_servers, name="discovery"),
]
