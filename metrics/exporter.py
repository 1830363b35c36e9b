"""The scrape endpoint: `GET /metrics` in the Prometheus text format, rendered from the Redis aggregates.

Each scrape reads Redis afresh, so any number of exporters (or one restarted) report the same totals.
"""

from __future__ import annotations

import logging
import socket
import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.utils import floatToGoString

from metrics import aggregates

logger = logging.getLogger(__name__)

SCRAPE_PATH = "/metrics"


class AggregatesCollector:
    """A prometheus_client collector over `aggregates.snapshot()`: one family per instrument."""

    def __init__(self, client: redis.Redis | None = None):
        self.client = client

    def collect(self):
        snapshot = aggregates.snapshot(self.client)
        for instrument in aggregates.INSTRUMENTS:
            points = snapshot.series[instrument.name]
            labels, name = list(instrument.labels), instrument.prometheus_name
            if instrument.kind == "counter":
                family = CounterMetricFamily(
                    name, instrument.description, labels=instrument.prometheus_labels
                )
                for point in points:
                    family.add_metric([point.labels[label] for label in labels], point.value)
            else:
                family = HistogramMetricFamily(
                    name, instrument.description, labels=instrument.prometheus_labels, unit="seconds"
                )
                for point in points:
                    family.add_metric(
                        [point.labels[label] for label in labels],
                        _cumulative(point, instrument.bounds),
                        point.sum,
                    )
            yield family


def _cumulative(point: aggregates.HistogramPoint, bounds: tuple[float, ...]) -> list[tuple[str, int]]:
    """Prometheus buckets count every observation at or below their bound."""
    bounds = [*bounds, float("inf")]
    buckets, total = [], 0
    for bound, count in zip(bounds, point.bucket_counts, strict=True):
        total += count
        buckets.append((floatToGoString(bound), total))
    return buckets


def build_registry(client: redis.Redis | None = None) -> CollectorRegistry:
    """A registry of its own (not prometheus_client's global one, which holds process metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AggregatesCollector(client))
    return registry


def render(registry: CollectorRegistry | None = None) -> bytes:
    """The whole exposition, as a scrape would get it."""
    return generate_latest(registry or build_registry())


def make_app(registry: CollectorRegistry | None = None):
    """The WSGI app: `GET /metrics` only; anything else is 404 (405 for other methods)."""
    registry = registry or build_registry()

    def app(environ, start_response):
        def reply(status: str, body: bytes, content_type: str = "text/plain; charset=utf-8", extra=()):
            start_response(
                status, [("Content-Type", content_type), ("Content-Length", str(len(body))), *extra]
            )
            return [b"" if environ["REQUEST_METHOD"] == "HEAD" else body]

        if environ.get("PATH_INFO") != SCRAPE_PATH:
            return reply("404 Not Found", b"not found\n")
        if environ["REQUEST_METHOD"] not in ("GET", "HEAD"):
            return reply("405 Method Not Allowed", b"method not allowed\n", extra=[("Allow", "GET, HEAD")])
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        try:
            body = encoder(registry)
        except redis.RedisError as exc:
            logger.warning("metrics scrape failed: Redis is unavailable (%s)", exc)
            return reply("503 Service Unavailable", b"metrics store unavailable\n")
        return reply("200 OK", body, content_type)

    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _ThreadingWSGIServer6(_ThreadingWSGIServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    """Scrapes every few seconds would flood the log with access lines."""

    def log_message(self, format, *args):
        pass


class ScrapeServer:
    """The scrape endpoint in a background thread. Binding happens in the constructor (OSError if taken)."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry | None = None):
        server_class = _ThreadingWSGIServer6 if ":" in host else _ThreadingWSGIServer
        self._server = make_server(
            host.strip("[]"), port, make_app(registry), server_class=server_class, handler_class=_QuietHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics-scrape", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_port

    def start(self) -> ScrapeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for serve_forever, so only once it runs
            self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
