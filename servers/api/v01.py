"""/v0.1 (and /v0): the official MCP Registry listing API, over the servers the caller may access.

Errors here use the official format `{"error": {"code", "message"}}` (see registry_site/errors.py)."""

import json
import re
from datetime import UTC

from django.http import HttpResponse
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsAuthenticatedPrincipal
from accounts.authentication import BearerAuthentication, PublicListingAuthentication, principal_of
from registry_site.errors import ApiError, ErrorCode
from registry_site.openapi import V01Error, documented, path_parameter
from registry_site.validators import PATH_PATTERN
from servers.api.pagination import BadCursor, decode_cursor, encode_cursor
from servers.api.v01_serializers import server_list, server_response
from servers.clients import gateway_base_url
from servers.naming import path_from_name
from servers.selectors import server_visible, servers_page_body

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_INTEGER = re.compile(r"^[0-9]{1,7}$")

SERVER_NAME = path_parameter("server_name", "the server name, URL-encoded: io.mcpgateway%2Fweather")
LIST_PARAMETERS = [
    OpenApiParameter("cursor", str, description="opaque cursor of the next page (`metadata.nextCursor`)"),
    OpenApiParameter("limit", int, description="servers per page, 1-1000 (default 30)"),
    OpenApiParameter("search", str, description="substring of the server name or description"),
    OpenApiParameter("updated_since", str, description="RFC 3339 date-time with a time zone"),
    OpenApiParameter("version", str, description="`latest` or a version"),
    OpenApiParameter("include_deleted", bool),
]


def invalid(message: str) -> ApiError:
    return ApiError(400, ErrorCode.BAD_REQUEST, message)


def not_found(message: str = "Server not found") -> ApiError:
    return ApiError(404, ErrorCode.NOT_FOUND, message)


class V01View(APIView):
    authentication_classes = [BearerAuthentication, PublicListingAuthentication]
    permission_classes = [IsAuthenticatedPrincipal]


class ServerListView(V01View):
    """GET /v0.1/servers: cursor, limit (1–1000), search, updated_since, version, include_deleted."""

    @documented(parameters=LIST_PARAMETERS, errors=(400, 401, 429), error_body=V01Error)
    def get(self, request):
        params = request.query_params
        limit = self._limit(params.get("limit"))
        updated_since = self._updated_since(params.get("updated_since"))
        if params.get("include_deleted", "false").lower() not in ("true", "false"):
            raise invalid("include_deleted must be true or false.")
        query = {
            "search": params.get("search", "").strip(),
            "updated_since": updated_since.isoformat() if updated_since else "",
            "version": params.get("version", "").strip(),
        }
        after = None
        if "cursor" in params:
            try:
                after = decode_cursor(params["cursor"], query)
            except BadCursor as exc:
                raise invalid(str(exc)) from None
        body, shown, last_path, more = servers_page_body(
            principal_of(request),
            after=after,
            limit=limit,
            base_url=gateway_base_url(request),
            search=query["search"],
            updated_since=updated_since,
            version=query["version"] or None,
        )
        metadata: dict = {"count": shown}  # `nextCursor` only when there is a next page (docs/api.md)
        if more:
            metadata["nextCursor"] = encode_cursor(last_path, query)
        return HttpResponse(
            b'{"servers":' + body.encode() + b',"metadata":' + json.dumps(metadata).encode() + b"}",
            content_type="application/json",
        )

    @staticmethod
    def _limit(raw: str | None) -> int:
        if raw is None:
            return DEFAULT_LIMIT
        if not _INTEGER.match(raw) or not 1 <= int(raw) <= MAX_LIMIT:
            raise invalid(f"limit must be an integer from 1 to {MAX_LIMIT}.")
        return int(raw)

    @staticmethod
    def _updated_since(raw: str | None):
        if raw is None:
            return None
        try:
            value = parse_datetime(raw.strip().replace(" ", "+"))
            # As UTC: PostgreSQL refuses offsets beyond ±15:59, which RFC 3339's syntax allows.
            value = value.astimezone(UTC) if value is not None and value.tzinfo is not None else None
        except (ValueError, OverflowError):
            value = None
        if value is None:
            raise invalid("updated_since must be an RFC 3339 date-time with a time zone.")
        return value


class ServerVersionsView(V01View):
    """GET /v0.1/servers/{serverName}/versions (one entry: each server has one version) and
    GET /v0.1/servers/{serverName}/versions/{version} (`latest` or the server's own version)."""

    @documented(parameters=[SERVER_NAME], errors=(401, 404), error_body=V01Error)
    def get(self, request, server_name: str, version: str | None = None):
        path = path_from_name(server_name)
        if path is None or not PATH_PATTERN.match(path):
            raise not_found()
        server = server_visible(principal_of(request), path)
        if server is None:
            raise not_found()
        if version is None:
            return Response(server_list([server], base_url=gateway_base_url(request), next_cursor=None))
        if version != "latest" and version != server.version:
            raise not_found("Server version not found")
        return Response(server_response(server, base_url=gateway_base_url(request)))
