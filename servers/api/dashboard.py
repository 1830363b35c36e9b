"""The session dashboard's JSON API (`/api/servers`, toggle, register, details, tools, refresh).

The reads and checks at the top are shared with the dashboard pages (`servers/views.py`), so a browser
form post and a JSON call to the same URL find the same server, refuse the same callers with the same
message and call the same service.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsAuthenticatedPrincipal
from accounts.authentication import BearerAuthentication, RegistrySessionAuthentication, principal_of
from accounts.choices import UiPermission
from accounts.principal import ALL, Principal
from core.errors import ApiError, ErrorCode
from core.openapi import documented, path_parameter
from servers.api.serializers import DashboardServerSerializer, InternalServerSerializer
from servers.models import Server, Tool
from servers.policies import require, server_visible, shown_with_tools, tools_visible
from servers.selectors import servers_listed
from servers.services import ServerConflict, server_refresh, server_register, server_toggle

TOOLS_LIMIT = 5000  # tools in `/api/tools/all`
SESSION_CHALLENGE = 'Session realm="mcp-gateway-registry"'
ENABLING_VALUES = {"on", "true", "1"}

# -- reads and checks shared with the dashboard pages ----------------------------------------------

SERVICE_PATH = path_parameter("service_path", "the server path, e.g. weather or team/weather")
TOGGLE_FORM = inline_serializer("ToggleForm", {"enabled": serializers.BooleanField()})


def wants_enabled(value) -> bool:
    """The toggle form's `enabled`: `on`, `true` or `1` enable; omitted or anything else disables."""
    return str(value).strip().lower() in ENABLING_VALUES


def dashboard_toggle(principal: Principal, service_path: str, enabled) -> Server:
    """Enable or disable a server and, once enabled, check it at once (as the internal toggle does)."""
    with transaction.atomic():
        server = server_visible(principal, service_path, UiPermission.TOGGLE_SERVICE, lock=True)
        server_toggle(actor=principal, server=server, enabled=wants_enabled(enabled))
        server_refresh(server=server)
    return server


def toggle_message(server: Server) -> str:
    return f"Server {server.path} {'enabled' if server.is_enabled else 'disabled'}."


def dashboard_register(principal: Principal, data) -> Server:
    """Register a server from the dashboard form. It starts disabled: registering needs only
    `register_service`, while putting a server into traffic is a `toggle_service` decision.

    Raises ApiError (403, 400 conflict) or a DRF ValidationError with the errors per field."""
    require(principal, UiPermission.REGISTER_SERVICE)
    serializer = DashboardServerSerializer(data=data, context={"may_set_headers": principal.is_admin})
    serializer.is_valid(raise_exception=True)
    path = serializer.validated_data["path"]
    require(principal, UiPermission.REGISTER_SERVICE, path)
    try:
        server, _ = server_register(
            actor=principal, path=path, is_enabled=False, **serializer.service_fields()
        )
    except ServerConflict as conflict:
        raise ApiError(400, ErrorCode.CONFLICT, str(conflict)) from None
    except IntegrityError:  # lost a race with another registration of the same path
        raise ApiError(400, ErrorCode.CONFLICT, f"A server is already registered at {path}.") from None
    except DjangoValidationError as invalid:
        raise serializers.ValidationError(model_errors(invalid)) from None
    return server


def register_message(server: Server) -> str:
    return f"Server {server.path} registered; it starts disabled until someone enables it."


def dashboard_refresh(principal: Principal, service_path: str) -> Server:
    """Queue a health check; a disabled server is never checked, so asking is a 400."""
    server = server_visible(principal, service_path, UiPermission.HEALTH_CHECK_SERVICE)
    if not server.is_enabled:
        raise ApiError(400, ErrorCode.BAD_REQUEST, f"Server {server.path} is disabled; enable it first.")
    server_refresh(server=server)
    return server


def model_errors(invalid: DjangoValidationError) -> dict:
    """A model's full_clean() errors in the serializer's shape (field → messages)."""
    return getattr(invalid, "message_dict", None) or {"non_field_errors": invalid.messages}


# -- output shapes ---------------------------------------------------------------------------------


class ServerSummarySerializer(serializers.ModelSerializer):
    class Meta:
        model = Server
        fields = ["path", "name", "description", "is_enabled", "health_status"]


class ToggleResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = Server
        fields = ["path", "is_enabled", "health_status"]


class HealthResultSerializer(serializers.ModelSerializer):
    last_checked_iso = serializers.DateTimeField(source="last_checked_at")

    class Meta:
        model = Server
        fields = ["path", "health_status", "last_checked_iso", "num_tools"]


class ToolSerializer(serializers.ModelSerializer):
    """A tool as MCP describes it (`inputSchema`, camel-cased)."""

    inputSchema = serializers.JSONField(source="input_schema")

    class Meta:
        model = Tool
        fields = ["name", "description", "inputSchema"]


class ServerToolSerializer(ToolSerializer):
    """A tool in a listing across servers, carrying the path of its server."""

    server_path = serializers.CharField()

    class Meta(ToolSerializer.Meta):
        fields = [*ToolSerializer.Meta.fields, "server_path"]


class ServerDetailSerializer(InternalServerSerializer):
    """Everything about a server but its outbound headers, with its tools."""

    tools = ToolSerializer(many=True)

    class Meta(InternalServerSerializer.Meta):
        fields = [*InternalServerSerializer.Meta.fields, "created_at", "updated_at", "tools"]


# -- views -----------------------------------------------------------------------------------------


class DashboardApiView(APIView):
    """The dashboard's session cookie (CSRF on posts), or the bearer token every other JSON API takes,
    in JSON and in the browsable API alike; a request with neither is a 401, not DRF's 403."""

    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsAuthenticatedPrincipal]

    def get_authenticate_header(self, request):
        return SESSION_CHALLENGE


class ServerListView(DashboardApiView):
    """GET /api/servers?query=: the servers the caller may see."""

    @documented(
        parameters=[OpenApiParameter("query", str, description="search text")],
        responses={200: OpenApiTypes.OBJECT},
        errors=(400, 401),
    )
    def get(self, request):
        servers, truncated = servers_listed(principal_of(request), request.query_params.get("query", ""))
        return Response({"servers": ServerSummarySerializer(servers, many=True).data, "truncated": truncated})


class ToggleView(DashboardApiView):
    """POST /api/toggle/{path} (and /toggle/{path}): form `enabled`; needs toggle_service for the path."""

    @documented(
        parameters=[SERVICE_PATH],
        request=TOGGLE_FORM,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, service_path):
        server = dashboard_toggle(principal_of(request), service_path, request.data.get("enabled"))
        return Response({**ToggleResultSerializer(server).data, "message": toggle_message(server)})


class RegisterView(DashboardApiView):
    """POST /api/register (and /register): the register form; the new server starts disabled."""

    @documented(
        request=DashboardServerSerializer,
        responses={201: OpenApiTypes.OBJECT},
        errors=(400, 401, 403, 409, 413),
    )
    def post(self, request):
        server = dashboard_register(principal_of(request), request.data)
        return Response(
            {"message": register_message(server), "service": InternalServerSerializer(server).data},
            status=201,
        )


class ServerDetailsView(DashboardApiView):
    """GET /api/server_details/{path}: one visible server; `all`: every visible server."""

    @documented(
        parameters=[SERVICE_PATH],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, service_path):
        principal = principal_of(request)
        if service_path == ALL:
            servers, truncated = servers_listed(principal)
            return Response(
                {
                    "servers": ServerDetailSerializer(shown_with_tools(principal, servers), many=True).data,
                    "truncated": truncated,
                }
            )
        server = server_visible(principal, service_path)
        return Response(ServerDetailSerializer(shown_with_tools(principal, [server])[0]).data)


class ToolsView(DashboardApiView):
    """GET /api/tools/{path}: the tools of one visible, enabled server; `all`: of every such server."""

    @documented(
        parameters=[SERVICE_PATH],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, service_path):
        principal = principal_of(request)
        if service_path == ALL:
            tools = (
                tools_visible(principal)
                .filter(server__is_enabled=True)
                .annotate(server_path=F("server__path"))
                .order_by("server_path", "name")[: TOOLS_LIMIT + 1]
            )
            tools = list(tools)
            return Response(
                {
                    "tools": ServerToolSerializer(tools[:TOOLS_LIMIT], many=True).data,
                    "truncated": len(tools) > TOOLS_LIMIT,
                }
            )
        server = server_visible(principal, service_path)
        if not server.is_enabled:
            raise ApiError(400, ErrorCode.BAD_REQUEST, f"Server {server.path} is disabled.")
        return Response({"tools": ToolSerializer(tools_visible(principal, server), many=True).data})


class RefreshView(DashboardApiView):
    """POST /api/refresh/{path}: queue a health check and tool discovery; needs health_check_service."""

    @documented(
        parameters=[SERVICE_PATH],
        request=None,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, service_path):
        server = dashboard_refresh(principal_of(request), service_path)
        return Response({**HealthResultSerializer(server).data, "message": "Health check queued"})
