from django.apps import AppConfig


class ServersConfig(AppConfig):
    """MCP servers, their tools and their health."""

    name = "servers"

    def ready(self):
        from core import attestations
        from core.targets import TARGETS, TargetKind, UpstreamKind
        from servers import cache, policies, selectors
        from servers.models import Server

        cache.connect()
        attestations.FINDERS.append(selectors.tool_set_attestation)
        TARGETS.exists[TargetKind.SERVER] = lambda path: Server.objects.filter(path=path).exists()
        TARGETS.token_reach = policies.reach_for
        TARGETS.upstreams[TargetKind.SERVER] = UpstreamKind(
            model=Server,
            usable=policies.servers_needing_credential,
            visible=policies.server_usable,
            page=lambda server: f"/servers{server.path}",
        )
