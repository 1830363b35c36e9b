"""The metrics collection service (the `metrics` app, served on its own port) and the registry's own
client of it.

Keys come from every `METRICS_API_KEY_<NAME>` variable (read by `metrics.services.keys`), not from a
setting here."""

import os

from registry_site.settings.env import env

# -- the service -------------------------------------------------------------------------------------
METRICS_SERVICE_HOST = env.str("METRICS_SERVICE_HOST", default="127.0.0.1")
METRICS_SERVICE_PORT = env.int("METRICS_SERVICE_PORT", default=8890)
# Processes of the service sharing its port (SO_REUSEPORT), each running requests in WEB_THREADS threads.
METRICS_CONCURRENCY = env.int("METRICS_CONCURRENCY", default=os.cpu_count() or 1)
METRICS_RATE_LIMIT = env.int("METRICS_RATE_LIMIT", default=1000)  # requests per minute per key
METRICS_RETENTION_DAYS = env.int("METRICS_RETENTION_DAYS", default=90)
METRICS_FLUSH_INTERVAL_SECONDS = env.float("METRICS_FLUSH_INTERVAL_SECONDS", default=5.0)
METRICS_MAX_BATCH = env.int("METRICS_MAX_BATCH", default=1000)  # metrics in one POST
METRICS_MAX_BODY_BYTES = env.int("METRICS_MAX_BODY_BYTES", default=1024 * 1024)
# Behind Redis Sentinel: a batch is accepted (202) only once this many replicas hold it (Redis WAIT, up
# to METRICS_REPLICA_TIMEOUT_MS), so a failover never loses an accepted metric; otherwise 503.
METRICS_REPLICA_ACKS = env.int("METRICS_REPLICA_ACKS", default=0)
METRICS_REPLICA_TIMEOUT_MS = env.int("METRICS_REPLICA_TIMEOUT_MS", default=1000)

# -- export ------------------------------------------------------------------------------------------
OTEL_SERVICE_NAME = env.str("OTEL_SERVICE_NAME", default="mcp-metrics-service")
OTEL_PROMETHEUS_ENABLED = env.bool("OTEL_PROMETHEUS_ENABLED", default=True)
OTEL_PROMETHEUS_HOST = env.str("OTEL_PROMETHEUS_HOST", default="127.0.0.1")
OTEL_PROMETHEUS_PORT = env.int("OTEL_PROMETHEUS_PORT", default=9465)
# The metrics' OTLP collector; the SDK's standard variable (which also turns traces on: gateway/tracing.py)
# stands for it when it is not set.
OTEL_OTLP_ENDPOINT = env.str(
    "OTEL_OTLP_ENDPOINT", default=env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
).rstrip("/")
OTEL_EXPORT_INTERVAL_SECONDS = env.float("OTEL_EXPORT_INTERVAL_SECONDS", default=15.0)

# -- the registry's own client -----------------------------------------------------------------------
# Where the registry sends its auth, discovery and health-check metrics, with which key. The key
# defaults to METRICS_API_KEY_REGISTRY, so setting that one variable makes the registry report.
METRICS_SERVICE_URL = env.str(
    "METRICS_SERVICE_URL", default=f"http://{METRICS_SERVICE_HOST}:{METRICS_SERVICE_PORT}"
).rstrip("/")
METRICS_API_KEY = env.str("METRICS_API_KEY", default="") or env.str("METRICS_API_KEY_REGISTRY", default="")
