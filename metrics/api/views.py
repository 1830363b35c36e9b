"""The metrics service's HTTP API: ingestion, the caller's rate limit, retention administration.

Every answer to a known key carries X-RateLimit-Limit / -Remaining / -Reset. Bodies of errors follow the
registry's one format `{detail, error_code, request_id}`; validation failures add `errors`."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import ApiError, ErrorCode, error_body
from core.openapi import ErrorSerializer, documented
from core.untrusted import InputRejected, json_loads
from metrics.api.authentication import (
    ApiKeyAuthentication,
    HasAdminKey,
    HasApiKey,
    rate_limit_peek,
    rate_limit_take,
)
from metrics.models import METRIC_TABLES
from metrics.selectors import retention_policies
from metrics.services import metrics_ingest, retention_apply
from metrics.validation import BatchError

BATCH = inline_serializer(
    "MetricsBatch",
    {
        "service": serializers.CharField(help_text="the service of the API key"),
        "version": serializers.CharField(required=False),
        "metrics": serializers.ListField(child=serializers.DictField(), help_text="docs/metrics.md"),
    },
)
ACCEPTED = inline_serializer(
    "MetricsAccepted",
    {
        "accepted": serializers.IntegerField(),
        "rejected": serializers.IntegerField(),
        "request_id": serializers.CharField(),
        "errors": serializers.ListField(child=serializers.DictField(), required=False),
    },
)
CLEANUP = inline_serializer(
    "RetentionCleanup",
    {
        "dry_run": serializers.BooleanField(required=False),
        "tables": serializers.ListField(child=serializers.CharField(), required=False),
    },
)


class KeyedView(APIView):
    """Authenticated by X-API-Key; every request takes one token of the key's bucket."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [HasApiKey]
    takes_token = True

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        key = request.auth
        self.decision = rate_limit_take(key) if self.takes_token else rate_limit_peek(key)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if decision := getattr(self, "decision", None):
            for name, value in decision.headers().items():
                response[name] = value
        return response


class IngestView(KeyedView):
    """POST /metrics: 202 when at least one metric was accepted, 422 when none was."""

    @documented(
        request=BATCH, responses={202: ACCEPTED, 422: ErrorSerializer}, errors=(400, 401, 413, 415, 429)
    )
    def post(self, request):
        body = _json_body(request)
        try:
            result = metrics_ingest(key=request.auth, body=body)
        except BatchError as exc:
            sent = body.get("metrics") if isinstance(body, dict) else None
            errors = [{"index": None, "field": exc.field, "message": exc.message}]
            return _rejected(request, exc.message, errors, len(sent) if isinstance(sent, list) else 0)
        if not result.accepted:
            return _rejected(request, "No metric of the batch was valid.", result.errors, result.rejected)
        answer = {"accepted": result.accepted, "rejected": result.rejected, "request_id": request.request_id}
        if result.errors:
            answer["errors"] = result.errors
        return Response(answer, status=202)


class RateLimitView(KeyedView):
    """GET /rate-limit: the caller's bucket, without consuming a token."""

    takes_token = False

    @documented(errors=(401, 429))
    def get(self, request):
        decision = self.decision
        return Response(
            {
                "service": request.auth.service,
                "limit_per_minute": decision.limit,
                "remaining": decision.remaining,
                "reset_seconds": decision.reset_seconds,
            }
        )


class RetentionPoliciesView(KeyedView):
    permission_classes = [HasAdminKey]

    @documented(errors=(401, 403, 429))
    def get(self, request):
        return Response({"default_days": settings.METRICS_RETENTION_DAYS, "policies": retention_policies()})


class RetentionCleanupView(KeyedView):
    """POST /admin/retention/cleanup `{dry_run?, tables?}`: rows deleted per table (or that would be)."""

    permission_classes = [HasAdminKey]

    @documented(request=CLEANUP, errors=(400, 401, 403, 413, 415, 429))
    def post(self, request):
        body = _json_body(request, empty_ok=True)
        if body is _EMPTY:
            body = {}
        if not isinstance(body, dict):
            raise ApiError(400, ErrorCode.BAD_REQUEST, "The body must be a JSON object.")
        dry_run = body.get("dry_run", False)
        tables = body.get("tables")
        if not isinstance(dry_run, bool):
            raise ApiError(400, ErrorCode.BAD_REQUEST, "`dry_run` must be true or false.")
        if tables is not None:
            if not isinstance(tables, list) or not all(isinstance(name, str) for name in tables):
                raise ApiError(400, ErrorCode.BAD_REQUEST, "`tables` must be a list of table names.")
            unknown = sorted(set(tables) - set(METRIC_TABLES))
            if unknown:
                known = ", ".join(METRIC_TABLES)
                raise ApiError(400, ErrorCode.BAD_REQUEST, f"Unknown tables {unknown}; known: {known}.")
        counts = retention_apply(dry_run=dry_run, tables=tables)
        return Response({"dry_run": dry_run, "deleted": counts, "total": sum(counts.values())})


_EMPTY = object()  # an empty body, where one is allowed (unlike `null`, `[]` or `0`, which are refused)


def _json_body(request, *, empty_ok: bool = False):
    """The JSON body: `application/json` only (415 otherwise); size bounded by the ASGI guard
    (`registry_site/asgi_guard.py`, METRICS_MAX_BODY_BYTES); text and depth by the shared input rule."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError(413, ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.") from None
    if not raw.strip() and empty_ok:
        return _EMPTY
    if request.content_type != "application/json":
        raise ApiError(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, "The body must be sent as application/json.")
    try:
        return json_loads(raw, text=False)  # text is checked metric by metric (metrics/validation.py)
    except InputRejected as rejected:
        detail = "The body is not valid JSON." if rejected.unparsable else str(rejected)
        raise ApiError(400, ErrorCode.BAD_REQUEST, detail) from None


def _rejected(request, detail: str, errors: list[dict], rejected: int) -> Response:
    body = {
        **error_body(request, detail, ErrorCode.VALIDATION_ERROR),
        "accepted": 0,
        "rejected": rejected,
        "errors": errors,
    }
    return Response(body, status=422)
