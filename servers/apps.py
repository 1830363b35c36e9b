from django.apps import AppConfig


class ServersConfig(AppConfig):
    """MCP servers, their tools and their health."""

    name = "servers"

    def ready(self):
        from servers import cache

        cache.connect()
