"""`GET /api/audit/export?since=<cursor>&limit=<n>&format=ndjson|ocsf|cef` (administrators): the audit
chain's rows after the cursor, one per line (accounts/audit_export.py). `X-Audit-Cursor` is the place of
the last row sent: ask again with `since` set to it, and nothing is lost or sent twice."""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import APIView

from accounts.api.permissions import IsRegistryAdmin
from accounts.audit_export import FORMATS, line, rows_after
from accounts.authentication import BearerAuthentication, RegistrySessionAuthentication
from accounts.services.audit_chain import audit_chain_extend
from core.errors import ApiError, ErrorCode
from core.openapi import documented

DEFAULT_LIMIT, MAX_LIMIT = 1000, 10_000
CONTENT_TYPES = {"ndjson": "application/x-ndjson", "ocsf": "application/x-ndjson", "cef": "text/plain"}


def _number(request, name: str, default: int, most: int) -> int:
    raw = request.query_params.get(name, str(default))
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18 or int(raw) > most:
        raise ApiError(400, ErrorCode.BAD_REQUEST, f"{name} is a whole number from 0 to {most}.")
    return int(raw)


class _OwnFormat(DefaultContentNegotiation):
    """`format` names the export's shape here, not a DRF renderer: errors are answered in JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class AuditExportView(APIView):
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsRegistryAdmin]
    content_negotiation_class = _OwnFormat

    @documented(
        parameters=[
            OpenApiParameter("since", OpenApiTypes.INT, description="the cursor: the last place you read"),
            OpenApiParameter("limit", OpenApiTypes.INT, description=f"rows, at most {MAX_LIMIT}"),
            OpenApiParameter("format", OpenApiTypes.STR, enum=list(FORMATS)),
        ],
        responses={(200, media): OpenApiTypes.STR for media in sorted(set(CONTENT_TYPES.values()))},
        errors=(400, 401, 403),
    )
    def get(self, request):
        since = _number(request, "since", 0, 10**17)
        limit = _number(request, "limit", DEFAULT_LIMIT, MAX_LIMIT) or DEFAULT_LIMIT
        form = request.query_params.get("format", "ndjson")
        if form not in FORMATS:
            raise ApiError(400, ErrorCode.BAD_REQUEST, f"format is one of {', '.join(FORMATS)}.")
        audit_chain_extend()  # what has just been committed is exported in its place
        rows = rows_after(since, limit)
        body = "".join(f"{line(row, form)}\n" for row in rows)
        response = HttpResponse(body, content_type=CONTENT_TYPES[form])
        response["X-Audit-Cursor"] = str(rows[-1].chain_seq if rows else since)
        response["Cache-Control"] = "no-store"
        return response
