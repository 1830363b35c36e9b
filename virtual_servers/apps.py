from django.apps import AppConfig


class VirtualServersConfig(AppConfig):
    """Virtual servers: one gateway URL carrying chosen tools, prompts and resources of several servers,
    with tools renamed, described anew or given fixed arguments."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "virtual_servers"
    label = "virtual_servers"

    def ready(self):
        from core.targets import TARGETS, TargetKind
        from virtual_servers import cache, listing, selectors

        cache.connect()
        TARGETS.holders[TargetKind.VIRTUAL_SERVER] = selectors.path_holder
        TARGETS.exists[TargetKind.VIRTUAL_SERVER] = selectors.virtual_exists
        TARGETS.discovery_entries.append(selectors.discovery_entries)
        TARGETS.dashboard_sections.append(listing.dashboard_section)
