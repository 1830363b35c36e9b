"""OTLP/HTTP (protobuf) push of the Redis aggregates to a collector, when OTEL_OTLP_ENDPOINT is set.

The aggregates are cumulative since `aggregates.snapshot().started_at`, so every push sends cumulative
temporality: a lost push loses nothing, and a collector sees a reset only if the aggregates are cleared.
A failed push is logged and retried at the next interval; it never stops the exporter.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
import requests
from django.conf import settings
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from metrics import aggregates

logger = logging.getLogger(__name__)

METRICS_PATH = "/v1/metrics"
CONTENT_TYPE = "application/x-protobuf"
TIMEOUT_SECONDS = 10.0
SCOPE_NAME = "mcp-gateway-registry.metrics"
CUMULATIVE = metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE


def metrics_url(endpoint: str) -> str:
    """The collector's base URL plus /v1/metrics (as OTEL_EXPORTER_OTLP_ENDPOINT), unless already there."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(METRICS_PATH) else endpoint + METRICS_PATH


def _attributes(labels: dict[str, str]) -> list[KeyValue]:
    return [KeyValue(key=key, value=AnyValue(string_value=value)) for key, value in labels.items()]


def build_request(
    snapshot: aggregates.Snapshot, *, service_name: str, now_ns: int | None = None
) -> ExportMetricsServiceRequest:
    """One ExportMetricsServiceRequest with every series: monotonic cumulative Sums and Histograms."""
    now_ns = now_ns if now_ns is not None else time.time_ns()
    start_ns = int(snapshot.started_at * 1e9) if snapshot.started_at is not None else now_ns
    metrics = []
    for instrument in aggregates.INSTRUMENTS:
        points = snapshot.series[instrument.name]
        metric = metrics_pb2.Metric(
            name=instrument.name, description=instrument.description, unit=instrument.unit
        )
        if instrument.kind == "counter":
            metric.sum.CopyFrom(
                metrics_pb2.Sum(
                    aggregation_temporality=CUMULATIVE,
                    is_monotonic=True,
                    data_points=[
                        metrics_pb2.NumberDataPoint(
                            attributes=_attributes(point.labels),
                            start_time_unix_nano=start_ns,
                            time_unix_nano=now_ns,
                            as_int=point.value,
                        )
                        for point in points
                    ],
                )
            )
        else:
            metric.histogram.CopyFrom(
                metrics_pb2.Histogram(
                    aggregation_temporality=CUMULATIVE,
                    data_points=[
                        metrics_pb2.HistogramDataPoint(
                            attributes=_attributes(point.labels),
                            start_time_unix_nano=start_ns,
                            time_unix_nano=now_ns,
                            count=point.count,
                            sum=point.sum,
                            bucket_counts=list(point.bucket_counts),
                            explicit_bounds=list(instrument.bounds),
                        )
                        for point in points
                    ],
                )
            )
        metrics.append(metric)
    resource = Resource(attributes=_attributes({"service.name": service_name}))
    return ExportMetricsServiceRequest(
        resource_metrics=[
            metrics_pb2.ResourceMetrics(
                resource=resource,
                scope_metrics=[
                    metrics_pb2.ScopeMetrics(scope=InstrumentationScope(name=SCOPE_NAME), metrics=metrics)
                ],
            )
        ]
    )


def push(
    *,
    endpoint: str | None = None,
    service_name: str | None = None,
    timeout: float = TIMEOUT_SECONDS,
    client: redis.Redis | None = None,
) -> bool:
    """Send the current aggregates once. False (and a warning in the log) when anything failed."""
    url = metrics_url(endpoint if endpoint is not None else settings.OTEL_OTLP_ENDPOINT)
    try:
        request = build_request(
            aggregates.snapshot(client), service_name=service_name or settings.OTEL_SERVICE_NAME
        )
    except redis.RedisError as exc:
        logger.warning("OTLP push skipped: Redis is unavailable (%s)", exc)
        return False
    try:
        response = requests.post(
            url, data=request.SerializeToString(), headers={"Content-Type": CONTENT_TYPE}, timeout=timeout
        )
    except requests.RequestException as exc:
        logger.warning("OTLP push to %s failed: %s", url, exc)
        return False
    if not 200 <= response.status_code < 300:
        logger.warning("OTLP push to %s failed: HTTP %s %s", url, response.status_code, response.reason)
        return False
    return True


def push_every(stop: threading.Event, *, interval: float, endpoint: str | None = None) -> None:
    """Push now and then every `interval` seconds until `stop` is set (run it in a thread)."""
    while not stop.is_set():
        try:
            push(endpoint=endpoint, timeout=min(TIMEOUT_SECONDS, max(interval, 1.0)))
        except Exception:  # a bug must not end the loop silently: log it and try again next time
            logger.exception("OTLP push failed unexpectedly")
        stop.wait(interval)
