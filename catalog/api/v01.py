"""/v0.1 (and /v0): the official MCP Registry API, every operation of `openapi.yaml`.

Reads list the gateway's servers the caller may see and the versions published or mirrored here
(catalog/listing.py); writes publish versions and change their status (catalog/services/). Errors use
the official format `{"error": {"code", "message"}}` (see core/errors.py)."""

import json
import re
from datetime import UTC

from django.http import HttpResponse
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsAuthenticatedPrincipal
from accounts.authentication import (
    BearerAuthentication,
    PublicListingAuthentication,
    RegistrySessionAuthentication,
    principal_of,
)
from catalog import policies
from catalog.api.pagination import BadCursor, decode_cursor, encode_cursor
from catalog.listing import registry_page
from catalog.responses import version_response
from catalog.selectors import gateway_server_of, name_is_published, version_of, versions_page
from catalog.services import (
    CatalogRefused,
    StatusChange,
    server_status_set,
    version_publish,
    version_status_set,
)
from core.errors import ApiError, ErrorCode
from core.openapi import V01Error, documented, path_parameter
from core.validators import PATH_PATTERN
from servers.clients import gateway_base_url
from servers.naming import path_from_name
from servers.policies import server_seen, shown_counts
from servers.v01_responses import server_list, server_response

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_INTEGER = re.compile(r"^[0-9]{1,7}$")

SERVER_NAME = path_parameter("server_name", "the server name, URL-encoded: com.example%2Fweather")
VERSION = path_parameter("version", "a version, or `latest`")
INCLUDE_DELETED = OpenApiParameter("include_deleted", bool, description="show deleted versions too")
LIST_PARAMETERS = [
    OpenApiParameter("cursor", str, description="opaque cursor of the next page (`metadata.nextCursor`)"),
    OpenApiParameter("limit", int, description="entries per page, 1-1000 (default 100)"),
    OpenApiParameter("search", str, description="substring of the server name or description"),
    OpenApiParameter("updated_since", str, description="RFC 3339 date-time with a time zone"),
    OpenApiParameter("version", str, description="`latest` or a version"),
    INCLUDE_DELETED,
]


def invalid(message: str) -> ApiError:
    return ApiError(400, ErrorCode.BAD_REQUEST, message)


def not_found(message: str = "Server not found") -> ApiError:
    return ApiError(404, ErrorCode.NOT_FOUND, message)


def refused(refusal: CatalogRefused) -> ApiError:
    codes = {400: ErrorCode.BAD_REQUEST, 403: ErrorCode.PERMISSION_DENIED, 404: ErrorCode.NOT_FOUND}
    return ApiError(refusal.status, codes[refusal.status], refusal.message)


def _responses(request, name: str, rows) -> list[dict]:
    """ServerResponses of versions of `name`: with the gateway's URL as their remote once it is behind it."""
    base_url, server = gateway_base_url(request), gateway_server_of(name)
    return [version_response(row, base_url=base_url, gateway_server=server) for row in rows]


def _flag(params, name: str, default: bool = False) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    if raw.lower() not in ("true", "false"):
        raise invalid(f"{name} must be true or false.")
    return raw.lower() == "true"


def _gateway_path(name: str) -> str | None:
    """The path of the gateway server `name` stands for, or None for any other name."""
    path = path_from_name(name)
    return path if path is not None and PATH_PATTERN.match(path) else None


class V01View(APIView):
    """Reads accept a bearer token, the console's session (the browsable API) and the public listing
    (PUBLIC_LISTING); writes need a bearer token."""

    permission_classes = [IsAuthenticatedPrincipal]

    def get_authenticators(self):
        if self.request is not None and self.request.method in ("GET", "HEAD", "OPTIONS"):
            return [BearerAuthentication(), RegistrySessionAuthentication(), PublicListingAuthentication()]
        return [BearerAuthentication()]


class ServerListView(V01View):
    """GET /v0.1/servers: cursor, limit (1–1000), search, updated_since, version, include_deleted."""

    @documented(parameters=LIST_PARAMETERS, errors=(400, 401, 429), error_body=V01Error)
    def get(self, request):
        params = request.query_params
        limit = self._limit(params.get("limit"))
        updated_since = self._updated_since(params.get("updated_since"))
        # As the official API says: deleted versions are listed whenever updated_since is asked, so that a
        # mirror learns of deletions.
        include_deleted = _flag(params, "include_deleted", default=updated_since is not None)
        query = {
            "search": params.get("search", "").strip(),
            "updated_since": updated_since.isoformat() if updated_since else "",
            "version": params.get("version", "").strip(),
            "include_deleted": str(include_deleted),
        }
        after = None
        if "cursor" in params:
            try:
                after = decode_cursor(params["cursor"], query)
            except BadCursor as exc:
                raise invalid(str(exc)) from None
        body, shown, last, more = registry_page(
            principal_of(request),
            after=after,
            limit=limit,
            base_url=gateway_base_url(request),
            search=query["search"],
            updated_since=updated_since,
            version=query["version"] or None,
            include_deleted=include_deleted,
        )
        metadata: dict = {"count": shown}  # `nextCursor` only when there is a next page (docs/api.md)
        if more:
            metadata["nextCursor"] = encode_cursor(last, query)
        content = b'{"servers":' + body.encode() + b',"metadata":' + json.dumps(metadata).encode() + b"}"
        if request.accepted_renderer.format != "json":  # a browser: the browsable API shows the same body
            return Response(json.loads(content))
        return HttpResponse(content, content_type="application/json")

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
    """GET /v0.1/servers/{serverName}/versions: the versions, the newest published first, a page at a
    time as the list is (cursor, limit 1–1000, default 100; `metadata.nextCursor` while more follow),
    and no page past REGISTRY_MAX_ANSWER_BYTES. A gateway server (`io.<namespace>/…`) has one."""

    @documented(
        parameters=[SERVER_NAME, INCLUDE_DELETED, *LIST_PARAMETERS[:2]],
        errors=(400, 401, 404),
        error_body=V01Error,
    )
    def get(self, request, server_name: str):
        params = request.query_params
        include_deleted = _flag(params, "include_deleted")
        limit = ServerListView._limit(params.get("limit"))
        base_url = gateway_base_url(request)
        if (path := _gateway_path(server_name)) is not None:
            server = server_seen(principal_of(request), path)
            if server is None:
                raise not_found()
            shown = shown_counts(principal_of(request), [server])
            return Response(server_list(shown, base_url=base_url, next_cursor=None))
        query = {"name": server_name, "include_deleted": str(include_deleted), "list": "versions"}
        after = None
        if "cursor" in params:
            try:
                published, pk = decode_cursor(params["cursor"], query)
                after = (published, int(pk))
            except (BadCursor, ValueError) as exc:
                raise invalid(
                    str(exc) if isinstance(exc, BadCursor) else "The cursor is not valid."
                ) from None
        rows, more = versions_page(server_name, include_deleted=include_deleted, after=after, limit=limit)
        if not rows and after is None:
            raise not_found()
        metadata: dict = {"count": len(rows)}
        if more and rows:
            metadata["nextCursor"] = encode_cursor(
                (rows[-1].published_at.isoformat(), str(rows[-1].pk)), query
            )
        return Response({"servers": _responses(request, server_name, rows), "metadata": metadata})


class ServerVersionView(V01View):
    """GET /v0.1/servers/{serverName}/versions/{version} (`latest` or a version); PUT and DELETE are
    refused as the official API describes (501): published versions never change but for their status."""

    @documented(
        parameters=[SERVER_NAME, VERSION, INCLUDE_DELETED], errors=(400, 401, 404), error_body=V01Error
    )
    def get(self, request, server_name: str, version: str):
        include_deleted = _flag(request.query_params, "include_deleted")
        if (path := _gateway_path(server_name)) is not None:
            server = server_seen(principal_of(request), path)
            if server is None:
                raise not_found()
            if version != "latest" and version != server.version:
                raise not_found("Server version not found")
            [shown] = shown_counts(principal_of(request), [server])
            return Response(server_response(shown, base_url=gateway_base_url(request)))
        row = version_of(server_name, version, include_deleted=include_deleted)
        if row is None:
            raise not_found(
                "Server version not found" if name_is_published(server_name) else "Server not found"
            )
        return Response(_responses(request, server_name, [row])[0])

    @documented(parameters=[SERVER_NAME, VERSION], errors=(401, 403, 404, 501), error_body=V01Error)
    def put(self, request, server_name: str, version: str):
        self._refuse(
            request,
            server_name,
            version,
            "Published versions never change here: publish a new "
            "version, or change this one's status with PATCH …/status.",
        )

    @documented(parameters=[SERVER_NAME, VERSION], errors=(401, 403, 404, 501), error_body=V01Error)
    def delete(self, request, server_name: str, version: str):
        self._refuse(
            request,
            server_name,
            version,
            "Versions are never removed here: set the status to "
            "deleted with PATCH …/status, which hides the version from listings.",
        )

    @staticmethod
    def _refuse(request, server_name: str, version: str, message: str):
        if (
            _gateway_path(server_name) is None
            and version_of(server_name, version, include_deleted=True) is None
        ):
            raise not_found("Server version not found")
        if why := policies.publish_refusal(principal_of(request), server_name):
            raise ApiError(403, ErrorCode.PERMISSION_DENIED, why)
        raise ApiError(501, ErrorCode.NOT_IMPLEMENTED, message)


class VersionStatusView(V01View):
    """PATCH /v0.1/servers/{serverName}/versions/{version}/status: `{status, statusMessage?}`."""

    @documented(parameters=[SERVER_NAME, VERSION], errors=(400, 401, 403, 404), error_body=V01Error)
    def patch(self, request, server_name: str, version: str):
        try:
            row = version_status_set(
                actor=principal_of(request),
                name=server_name,
                version=version,
                change=StatusChange.from_body(request.data),
            )
        except CatalogRefused as refusal:
            raise refused(refusal) from None
        return Response(_responses(request, server_name, [row])[0])


class ServerStatusView(V01View):
    """PATCH /v0.1/servers/{serverName}/status: every version at once, all or none."""

    @documented(parameters=[SERVER_NAME], errors=(400, 401, 403, 404), error_body=V01Error)
    def patch(self, request, server_name: str):
        try:
            count, rows = server_status_set(
                actor=principal_of(request), name=server_name, change=StatusChange.from_body(request.data)
            )
        except CatalogRefused as refusal:
            raise refused(refusal) from None
        return Response({"updatedCount": count, "servers": _responses(request, server_name, rows)})


class PublishView(V01View):
    """POST /v0.1/publish (and /v0/publish, where `mcp-publisher` posts): a server.json document."""

    @documented(errors=(400, 401, 403), error_body=V01Error)
    def post(self, request):
        try:
            row = version_publish(actor=principal_of(request), document=request.data)
        except CatalogRefused as refusal:
            raise refused(refusal) from None
        return Response(_responses(request, row.name, [row])[0])
