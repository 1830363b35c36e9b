"""`manage.py metrics_exporter`: the scrape endpoint and the OTLP push, as one long-running process."""

import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core import preflight
from metrics import otlp
from metrics.exporter import SCRAPE_PATH, ScrapeServer


class Command(BaseCommand):
    help = (
        "Export the metric aggregates: GET /metrics on OTEL_PROMETHEUS_HOST:OTEL_PROMETHEUS_PORT when "
        "OTEL_PROMETHEUS_ENABLED, and an OTLP push every OTEL_EXPORT_INTERVAL_SECONDS when "
        "OTEL_OTLP_ENDPOINT is set. Runs until SIGTERM or Ctrl-C."
    )

    def handle(self, *args, **options):
        try:
            preflight.check_redis()
        except preflight.PreflightError as exc:
            raise CommandError(str(exc)) from exc

        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())

        serving = []
        server = None
        if settings.OTEL_PROMETHEUS_ENABLED:
            host, port = settings.OTEL_PROMETHEUS_HOST, settings.OTEL_PROMETHEUS_PORT
            try:
                server = ScrapeServer(host, port).start()
            except OSError as exc:
                raise CommandError(
                    f"OTEL_PROMETHEUS_PORT: port {port} on {host} is not available ({exc.strerror}); "
                    "stop what uses it or set OTEL_PROMETHEUS_PORT to another port"
                ) from exc
            shown = f"[{host}]" if ":" in host else host
            serving.append(f"scrape on http://{shown}:{server.port}{SCRAPE_PATH}")
        pusher = None
        if settings.OTEL_OTLP_ENDPOINT:
            interval = settings.OTEL_EXPORT_INTERVAL_SECONDS
            if interval <= 0:
                raise CommandError("OTEL_EXPORT_INTERVAL_SECONDS: must be a positive number of seconds")
            pusher = threading.Thread(
                target=otlp.push_every,
                args=(stop,),
                kwargs={"interval": interval, "endpoint": settings.OTEL_OTLP_ENDPOINT},
                name="metrics-otlp",
                daemon=True,
            )
            pusher.start()
            serving.append(
                f"OTLP push to {otlp.metrics_url(settings.OTEL_OTLP_ENDPOINT)} every {interval:g}s"
            )

        if serving:
            self.stdout.write("metrics exporter: " + "; ".join(serving))
        else:
            # Stay up rather than exit: a supervisor treats a child that exits as a failure.
            self.stdout.write(
                "metrics exporter: nothing to export (OTEL_PROMETHEUS_ENABLED is false and "
                "OTEL_OTLP_ENDPOINT is empty); idle until stopped"
            )
        self.stdout.flush()

        while not stop.wait(1.0):
            pass
        if server is not None:
            server.stop()
        if pusher is not None:
            pusher.join(timeout=otlp.TIMEOUT_SECONDS + 1)
        self.stdout.write("metrics exporter: stopped")
