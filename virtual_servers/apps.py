from django.apps import AppConfig


class VirtualServersConfig(AppConfig):
    """Virtual servers: one gateway URL carrying chosen tools, prompts and resources of several servers,
    with tools renamed, described anew or given fixed arguments."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "virtual_servers"
    label = "virtual_servers"

    def ready(self):
        from virtual_servers import cache

        cache.connect()
