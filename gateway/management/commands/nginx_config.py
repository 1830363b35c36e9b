"""`manage.py nginx_config`: write the nginx configuration for the registered servers (gateway/
nginx.py). Run it after registering a server on a new origin, then reload nginx; nothing else needs it."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from gateway import nginx


class Command(BaseCommand):
    help = "Write the nginx configuration (http context) that fronts the registry and its MCP servers."

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")
        parser.add_argument(
            "--registry",
            action="append",
            help="host:port of a registry web process, repeatable "
            "(default: REGISTRY_HOST:REGISTRY_PORT, 127.0.0.1 when that is 0.0.0.0)",
        )
        parser.add_argument(
            "--listen", action="append", help="nginx `listen` value, repeatable (default: 80)"
        )
        parser.add_argument("--server-name", default="_", help="nginx `server_name` (default: _)")
        parser.add_argument(
            "--ca-file",
            default=nginx.DEFAULT_CA_FILE,
            help="CA bundle for verifying https MCP servers (default: %(default)s)",
        )

    def handle(self, *args, **options):
        host = settings.REGISTRY_HOST if settings.REGISTRY_HOST not in ("0.0.0.0", "::", "") else "127.0.0.1"
        text = nginx.render(
            registry=options["registry"] or [f"{host}:{settings.REGISTRY_PORT}"],
            listen=options["listen"] or ["80"],
            server_name=options["server_name"],
            ca_file=options["ca_file"],
        )
        output = options["output"]
        if not output:
            self.stdout.write(text, ending="")
            return
        path = Path(output)
        if path.exists() and path.read_text() == text:
            self.stderr.write(f"{path} is up to date; nothing to reload.")
            return
        partial = path.with_name(path.name + ".tmp")
        try:
            partial.write_text(text)
            partial.replace(path)
        except OSError as exc:
            raise CommandError(f"Cannot write {path}: {exc.strerror}.") from None
        self.stderr.write(f"Wrote {path}. Check and reload nginx: nginx -t && nginx -s reload")
