"""The processes the registry runs as, by role: one definition for `manage.py serve` (every role in one
supervised group on one machine) and for the container image (one role per container):

    python -m runtime.roles web|metrics|worker|beat|exporter|migrate

`web` and `metrics` serve on REGISTRY_HOST:REGISTRY_PORT and METRICS_SERVICE_HOST:METRICS_SERVICE_PORT
(WEB_CONCURRENCY / METRICS_CONCURRENCY processes sharing the port); `migrate` applies migrations and
makes sure the admin user exists, once per release (a Kubernetes Job); the others run as `make run` runs
them. The process of a role replaces this one (exec), so signals reach it directly."""

import os
import sys

from django.conf import settings

from runtime.supervisor import Child, asgi_servers, python_module

ROLES = ("web", "metrics", "worker", "beat", "exporter", "migrate")


def children(role: str) -> list[Child]:
    """The processes of `role` (every role but `migrate`)."""
    if role == "web":
        application = "registry_site.asgi:application"
        return asgi_servers(
            "web", settings.WEB_CONCURRENCY, application, settings.REGISTRY_HOST, settings.REGISTRY_PORT
        )
    if role == "metrics":
        return asgi_servers(
            "metrics",
            settings.METRICS_CONCURRENCY,
            "registry_site.metrics_asgi:application",
            settings.METRICS_SERVICE_HOST,
            settings.METRICS_SERVICE_PORT,
        )
    if role == "exporter":
        return [Child("exporter", python_module("django", "metrics_exporter"))]
    if role == "worker":
        worker = [
            "worker",
            "--loglevel",
            settings.LOG_LEVEL,
            "--concurrency",
            str(settings.CELERY_WORKER_CONCURRENCY),
        ]
        return [
            Child(
                "worker", python_module("celery", "-A", "registry_site", *worker, "--hostname", "worker@%h")
            )
        ]
    if role == "beat":
        beat = [
            "beat",
            "--loglevel",
            settings.LOG_LEVEL,
            "--schedule",
            settings.CELERY_BEAT_SCHEDULE_FILENAME,
        ]
        return [Child("beat", python_module("celery", "-A", "registry_site", *beat))]
    raise ValueError(f"unknown role {role!r} (the roles are {', '.join(ROLES)})")


def migrate() -> None:
    from django.core.management import call_command

    from accounts.services import admin_ensure

    call_command("migrate", interactive=False, verbosity=1)
    admin_ensure(
        username=settings.ADMIN_USER,
        password=settings.ADMIN_PASSWORD,
        password_file=settings.ADMIN_PASSWORD_FILE,
    )


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0] not in ROLES:
        sys.exit(f"usage: python -m runtime.roles {{{'|'.join(ROLES)}}}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.production")
    role = argv[0]
    if role == "migrate":
        import django

        django.setup()
        migrate()
        return
    # The settings alone: the role's own processes set Django up (its apps and models, over a second of a
    # core), and this one only starts them.
    processes = children(role)
    if len(processes) == 1:
        command = processes[0].argv
        os.execv(command[0], command)
    from runtime import supervisor

    group = supervisor.Supervisor(processes, dict(os.environ), write=print)
    supervisor.install_signal_handlers(group)
    group.start()
    code = group.wait()
    group.stop()
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
