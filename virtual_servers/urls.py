from django.urls import path

from virtual_servers.page import virtual_server_page

app_name = "virtual_servers"

urlpatterns = [
    path("virtual-servers/<path:virtual_path>", virtual_server_page, name="page"),
]
