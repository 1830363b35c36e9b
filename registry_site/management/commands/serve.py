"""`manage.py serve`: migrate, make sure an admin exists, then run the whole group together: registry web,
metrics service web, metrics exporter, Celery worker and Celery beat."""

import os

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from accounts.services import admin_ensure
from core import preflight
from metrics.services import api_keys_from_environment
from runtime import roles, supervisor


class Command(BaseCommand):
    help = (
        "Start the whole registry (web + websocket, metrics service, metrics exporter, Celery worker, "
        "Celery beat) as one group."
    )

    def add_arguments(self, parser):
        parser.add_argument("--no-migrate", action="store_true", help="skip applying migrations")

    def handle(self, *args, **options):
        host, port = settings.REGISTRY_HOST, settings.REGISTRY_PORT
        try:
            preflight.check_database()
            preflight.check_redis()
            preflight.check_port_free("REGISTRY_PORT", host, port)
            preflight.check_port_free(
                "METRICS_SERVICE_PORT", settings.METRICS_SERVICE_HOST, settings.METRICS_SERVICE_PORT
            )
            if settings.OTEL_PROMETHEUS_ENABLED:
                preflight.check_port_free(
                    "OTEL_PROMETHEUS_PORT", settings.OTEL_PROMETHEUS_HOST, settings.OTEL_PROMETHEUS_PORT
                )
        except preflight.PreflightError as exc:
            raise CommandError(str(exc)) from exc

        if not options["no_migrate"]:
            self.stdout.write("==> applying migrations")
            call_command("migrate", interactive=False, verbosity=1, stdout=self.stdout)
        call_command("collectstatic", interactive=False, verbosity=0)
        admin = admin_ensure(
            username=settings.ADMIN_USER,
            password=settings.ADMIN_PASSWORD,
            password_file=settings.ADMIN_PASSWORD_FILE,
        )

        metrics_keys = api_keys_from_environment()
        children = [
            child
            for role in ("web", "metrics", "exporter", "worker", "beat")
            for child in roles.children(role)
        ]
        # Children join the servers this process holds instead of starting their own.
        env = {
            **os.environ,
            "DATABASE_URL": settings.DATABASE_URL,
            "REDIS_URL": settings.REDIS_URL,
            "SECRET_KEY": settings.SECRET_KEY,
            "JWT_SIGNING_KEY": settings.JWT_SIGNING_KEY,
            "PYTHONUNBUFFERED": "1",
        }
        group = supervisor.Supervisor(children, env, write=self.stdout.write)
        supervisor.install_signal_handlers(group)
        group.start()

        base_url = f"http://{'localhost' if host in ('127.0.0.1', '0.0.0.0') else host}:{port}"
        if supervisor.wait_until_healthy(f"http://{host}:{port}/health", group):
            self._banner(base_url, admin, metrics_keys)
        code = group.wait()
        self.stdout.write("supervisor | stopping")
        group.stop()
        if code:
            raise CommandError("a process of the group exited; see its output above")
        self.stdout.write("supervisor | stopped")

    def _banner(self, base_url: str, admin, metrics_keys: list[str]) -> None:
        metrics_url = f"http://{settings.METRICS_SERVICE_HOST}:{settings.METRICS_SERVICE_PORT}"
        scrape_url = f"http://{settings.OTEL_PROMETHEUS_HOST}:{settings.OTEL_PROMETHEUS_PORT}/metrics"
        lines = [
            "",
            "  MCP Gateway Registry is running",
            f"    dashboard      {base_url}/",
            f"    admin          {base_url}/admin/",
            f"    health         {base_url}/health",
            f"    metrics in     {metrics_url}/metrics (keys: {', '.join(metrics_keys) or 'none yet'})",
            f"    scrape         {scrape_url if settings.OTEL_PROMETHEUS_ENABLED else 'off'}",
            f"    admin user     {admin.user.get_username()}",
        ]
        if admin.password_file is not None:
            lines.append(f"    admin password generated and written to {admin.password_file} (shown once):")
            lines.append(f"                   {admin.password_file.read_text().splitlines()[1]}")
        elif settings.ADMIN_PASSWORD:
            lines.append("    admin password from ADMIN_PASSWORD")
        elif settings.ADMIN_PASSWORD_FILE.exists():
            lines.append(f"    admin password in {settings.ADMIN_PASSWORD_FILE}")
        lines.append("  Press Ctrl-C to stop.\n")
        self.stdout.write("\n".join(lines))
