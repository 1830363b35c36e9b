"""Validation of a submitted batch, metric by metric, into the records the buffer and the aggregates take.

A metric that breaks a rule is rejected with `{index, field, message}`; the others of the batch are
accepted. What breaks the batch as a whole (not a JSON object, no `metrics` list, too many metrics, a
`service` that is not the key's) rejects everything. The limits are documented in docs/metrics.md."""

import json
import math
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection

from core.metric_choices import AuthMethod, FlowStep, MetricType, ToolMethod, values_of
from core.untrusted import InputRejected, check_tree
from metrics.models import AuthMetric, DiscoveryMetric, GenericMetric, ToolExecutionMetric

MAX_DURATION_MS = 24 * 60 * 60 * 1000  # a day: anything longer is a unit mistake
MAX_FUTURE_SECONDS = 300  # clocks drift; a timestamp further ahead is wrong
MAX_DIMENSIONS = 32
MAX_KEY_LENGTH = 64
MAX_VALUE_LENGTH = 256
MAX_QUERY_LENGTH = 1000  # the discovery query is the one long text dimension
MAX_METADATA_BYTES = 4096
KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


# Limits of typed values come from the columns that store them (one source of truth): a metric the
# database would refuse is rejected here, never accepted and then lost in a flush.
def _max_length(model, name: str) -> int | None:
    return model._meta.get_field(name).max_length


def _integer_range(model, name: str) -> tuple[int, int]:
    return connection.ops.integer_field_range(model._meta.get_field(name).get_internal_type())


MAX_VERSION_LENGTH = _max_length(GenericMetric, "version")


class BatchError(Exception):
    """The batch as a whole is unusable; `field` names the part."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


@dataclass
class Validated:
    accepted: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)


class Invalid(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def validate_batch(body, *, service: str) -> Validated:
    """Validate a decoded JSON body sent with the key of `service`."""
    if not isinstance(body, dict):
        raise BatchError("body", "The body must be a JSON object with `service`, `version` and `metrics`.")
    try:
        check_tree({k: v for k, v in body.items() if k != "metrics"})
    except InputRejected as rejected:
        raise BatchError(rejected.field, rejected.message) from None
    sent_service = body.get("service", service)
    if not isinstance(sent_service, str) or sent_service.strip().lower() != service.lower():
        raise BatchError("service", f"This API key belongs to the service {service!r}.")
    version = body.get("version", "")
    if not isinstance(version, str) or len(version) > MAX_VERSION_LENGTH:
        raise BatchError("version", f"`version` must be a string of at most {MAX_VERSION_LENGTH} characters.")
    metrics = body.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise BatchError("metrics", "`metrics` must be a non-empty list.")
    if len(metrics) > settings.METRICS_MAX_BATCH:
        raise BatchError("metrics", f"A batch holds at most {settings.METRICS_MAX_BATCH} metrics.")

    result = Validated()
    now = time.time()
    for index, raw in enumerate(metrics):
        try:
            record = _metric(raw, now=now)
        except Invalid as exc:
            result.errors.append({"index": index, "field": exc.field, "message": exc.message})
            continue
        record.update(id=_row_id(raw.get("id"), service), service=service, version=version)
        result.accepted.append(record)
    return result


# Row ids of metrics sent with an `id` of their own: the sender's id within its service, so a batch sent
# again after an answer that never came is stored once, and no service can collide with another's rows.
_SENT_IDS = uuid.UUID("1f0c7a52-4a4e-5b8e-9d2c-6a2f1b7e8c30")


def _row_id(sent, service: str) -> str:
    if sent is None:
        return uuid.uuid4().hex
    return uuid.uuid5(_SENT_IDS, f"{service.lower()}:{uuid.UUID(str(sent)).hex}").hex


def _metric(raw, *, now: float) -> dict:
    if not isinstance(raw, dict):
        raise Invalid("metric", "Each metric must be a JSON object.")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in values_of(MetricType):
        raise Invalid("type", f"Unknown type; one of: {', '.join(MetricType.values)}.")
    if "value" not in raw or raw["value"] is None:
        raise Invalid("value", "`value` is required.")
    value = _number(raw["value"], "value")
    duration = raw.get("duration_ms")
    if duration is not None:
        duration = _number(duration, "duration_ms")
        if not 0 <= duration <= MAX_DURATION_MS:
            raise Invalid("duration_ms", f"`duration_ms` must be between 0 and {MAX_DURATION_MS} (a day).")
    dimensions = _dimensions(raw.get("dimensions", {}))
    metadata = raw.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise Invalid("metadata", "`metadata` must be a JSON object.")
    if len(json.dumps(metadata, default=str)) > MAX_METADATA_BYTES:
        raise Invalid("metadata", f"`metadata` must serialise to at most {MAX_METADATA_BYTES} bytes.")
    if "id" in raw and raw["id"] is not None:
        try:
            uuid.UUID(str(raw["id"]))
        except ValueError:
            raise Invalid(
                "id", "`id` must be a UUID (a metric sent again with its id is stored once)."
            ) from None
    try:  # after the typed checks, whose messages are more precise
        check_tree(raw)
    except InputRejected as rejected:
        raise Invalid(rejected.field, rejected.message) from None
    return {
        "type": kind,
        "value": value,
        "duration_ms": duration,
        "timestamp": _timestamp(raw.get("timestamp"), now=now),
        "dimensions": TYPED_DIMENSIONS.get(kind, _free)(dimensions),
        "metadata": metadata,
    }


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Invalid(name, f"`{name}` must be a number.")
    try:
        value = float(value)
    except OverflowError:  # an integer too large for a double
        value = math.inf
    if not math.isfinite(value):
        raise Invalid(name, f"`{name}` must be a finite number.")
    return value


def _timestamp(value, *, now: float) -> float:
    if value is None:
        return now
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise Invalid("timestamp", "`timestamp` must be ISO 8601 or seconds since the epoch.") from None
        if parsed.tzinfo is None:
            raise Invalid("timestamp", "`timestamp` must carry a time zone (for example a trailing Z).")
        seconds = parsed.timestamp()
    else:
        seconds = _number(value, "timestamp")
    if seconds > now + MAX_FUTURE_SECONDS:
        raise Invalid("timestamp", f"`timestamp` is more than {MAX_FUTURE_SECONDS} seconds in the future.")
    if seconds < now - settings.METRICS_RETENTION_DAYS * 86400:
        raise Invalid("timestamp", "`timestamp` is older than the retention period.")
    return seconds


def _dimensions(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid("dimensions", "`dimensions` must be a JSON object.")
    if len(value) > MAX_DIMENSIONS:
        raise Invalid("dimensions", f"At most {MAX_DIMENSIONS} dimensions.")
    for key, item in value.items():
        if len(key) > MAX_KEY_LENGTH or not KEY_PATTERN.match(key):
            raise Invalid(
                "dimensions",
                f"Dimension names are letters, digits, '_', '.', '-', at most {MAX_KEY_LENGTH} characters.",
            )
        limit = MAX_QUERY_LENGTH if key == "query" else MAX_VALUE_LENGTH
        if isinstance(item, str) and len(item) > limit:
            raise Invalid(f"dimensions.{key}", f"At most {limit} characters.")
        if isinstance(item, float) and not math.isfinite(item):
            raise Invalid(f"dimensions.{key}", "Numbers must be finite.")
        if item is not None and not isinstance(item, (str, int, float, bool)):
            raise Invalid(f"dimensions.{key}", "Dimension values are strings, numbers, booleans or null.")
    return value


# -- the dimensions of each typed kind ---------------------------------------------------------------


def _required_bool(dims: dict, key: str) -> bool:
    value = dims.get(key)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise Invalid(f"dimensions.{key}", f"`{key}` is required: true or false.")
    return value


def _choice(dims: dict, key: str, choices) -> str:
    value = dims.get(key)
    if not isinstance(value, str) or value not in values_of(choices):
        raise Invalid(f"dimensions.{key}", f"`{key}` is required: one of {', '.join(choices.values)}.")
    return value


def _text(dims: dict, key: str, model) -> str:
    """A text dimension stored in `model`'s column `key`, within the column's length."""
    value = dims.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid(f"dimensions.{key}", f"`{key}` must be a string.")
    limit = _max_length(model, key)
    if limit is not None and len(value) > limit:
        raise Invalid(f"dimensions.{key}", f"`{key}` must be at most {limit} characters.")
    return value


def _optional_number(dims: dict, key: str, model):
    """A non-negative number stored in `model`'s column `key`: whole and within range for an integer
    column, finite for a float one."""
    value = dims.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise Invalid(f"dimensions.{key}", f"`{key}` must be a non-negative number.")
    if model._meta.get_field(key).get_internal_type() == "FloatField":
        return _number(value, f"dimensions.{key}")
    if isinstance(value, float) and not value.is_integer():
        raise Invalid(f"dimensions.{key}", f"`{key}` must be a whole number.")
    low, high = _integer_range(model, key)
    if not low <= int(value) <= high:
        raise Invalid(f"dimensions.{key}", f"`{key}` must be at most {high}.")
    return int(value)


def _auth(dims: dict) -> dict:
    return {
        **dims,
        "success": _required_bool(dims, "success"),
        "method": _choice(dims, "method", AuthMethod),
        "server": _text(dims, "server", AuthMetric),
        "user_hash": _text(dims, "user_hash", AuthMetric),
    }


def _tool_execution(dims: dict) -> dict:
    return {
        **dims,
        "method": _choice(dims, "method", ToolMethod),
        "tool_name": _text(dims, "tool_name", ToolExecutionMetric),
        "client_name": _text(dims, "client_name", ToolExecutionMetric),
        "success": _required_bool(dims, "success"),
        "input_size_bytes": _optional_number(dims, "input_size_bytes", ToolExecutionMetric),
        "output_size_bytes": _optional_number(dims, "output_size_bytes", ToolExecutionMetric),
    }


def _discovery(dims: dict) -> dict:
    return {
        **dims,
        "query": _text(dims, "query", DiscoveryMetric),
        "results_count": _optional_number(dims, "results_count", DiscoveryMetric),
        "top_k": _optional_number(dims, "top_k", DiscoveryMetric),
        "top_n": _optional_number(dims, "top_n", DiscoveryMetric),
        "embedding_time_ms": _optional_number(dims, "embedding_time_ms", DiscoveryMetric),
        "search_time_ms": _optional_number(dims, "search_time_ms", DiscoveryMetric),
    }


def _protocol_latency(dims: dict) -> dict:
    return {**dims, "flow_step": _choice(dims, "flow_step", FlowStep)}


def _free(dims: dict) -> dict:
    return dims


TYPED_DIMENSIONS = {
    MetricType.AUTH_REQUEST: _auth,
    MetricType.TOOL_EXECUTION: _tool_execution,
    MetricType.TOOL_DISCOVERY: _discovery,
    MetricType.PROTOCOL_LATENCY: _protocol_latency,
}
