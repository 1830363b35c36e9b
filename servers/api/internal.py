"""The internal administration API (/api/internal/*): HTTP Basic against ADMIN_USER / ADMIN_PASSWORD
only, form or JSON bodies, JSON answers. Each view parses its input, calls one service and shapes the
answer; errors use the one error format."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsRegistryAdmin
from accounts.authentication import InternalBasicAuthentication, principal_of
from accounts.selectors import groups_overview
from accounts.services import (
    GroupRefused,
    group_create,
    group_delete,
)
from accounts.services.groups import GROUP_NAME_MAX_LENGTH
from core.errors import ApiError, ErrorCode
from core.openapi import documented
from core.validators import PATH_MAX_LENGTH, normalize_path
from servers.api.serializers import CommaListField, InternalServerSerializer, ServerInputSerializer
from servers.models import Server
from servers.services import (
    ServerConflict,
    server_delete,
    server_refresh,
    server_register,
    server_toggle,
    servers_refresh,
)

# -- input shapes ----------------------------------------------------------------------------------

INTERNAL_ERRORS = (400, 401, 403, 404, 413, 503)  # 503: the internal API is off without ADMIN_PASSWORD


class RegisterSerializer(ServerInputSerializer):
    """Every register field, plus `overwrite` (true/on/1) to replace a server already at the path."""

    overwrite = serializers.BooleanField(required=False, default=False)

    def service_fields(self) -> dict:
        fields = super().service_fields()
        fields.pop("overwrite", None)
        return fields


class ServicePathSerializer(serializers.Serializer):
    service_path = serializers.CharField(max_length=PATH_MAX_LENGTH + 10)

    def validate_service_path(self, value):
        return normalize_path(value)


class ToggleSerializer(ServicePathSerializer):
    """Without `enabled` the server's state flips."""

    enabled = serializers.BooleanField(required=False, allow_null=True, default=None)


class GroupServerSerializer(serializers.Serializer):
    """`server_name` is a path, with or without its leading `/`; `group_names` is comma-separated."""

    server_name = serializers.CharField(max_length=PATH_MAX_LENGTH + 10)
    group_names = CommaListField(item_max_length=150, max_items=100)

    def validate_server_name(self, value):
        return normalize_path(value)

    def validate_group_names(self, value):
        if not value:
            raise serializers.ValidationError("Name at least one group.")
        return value


class CreateGroupSerializer(serializers.Serializer):
    group_name = serializers.CharField(max_length=GROUP_NAME_MAX_LENGTH)
    description = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")
    create_in_idp = serializers.BooleanField(required=False, default=False)

    def validate_group_name(self, value):
        if "," in value:
            raise serializers.ValidationError("Group names cannot contain commas.")
        return value


class DeleteGroupSerializer(serializers.Serializer):
    group_name = serializers.CharField(max_length=150)
    delete_from_idp = serializers.BooleanField(required=False, default=False)
    force = serializers.BooleanField(required=False, default=False)


class ListGroupsQuerySerializer(serializers.Serializer):
    include_keycloak = serializers.BooleanField(required=False, default=True)
    include_scopes = serializers.BooleanField(required=False, default=True)


def valid(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _server_or_404(path: str, *, lock: bool = False) -> Server:
    servers = Server.objects.select_for_update() if lock else Server.objects.all()
    server = servers.filter(path=path).first()
    if server is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No server is registered at {path}.")
    return server


def refused(exc: GroupRefused) -> ApiError:
    return ApiError(exc.status, exc.code, exc.message)


# -- views -----------------------------------------------------------------------------------------


class InternalView(APIView):
    """The internal administration API: HTTP Basic against ADMIN_USER / ADMIN_PASSWORD only."""

    authentication_classes = [InternalBasicAuthentication]
    permission_classes = [IsRegistryAdmin]


class InternalRegisterView(InternalView):
    """POST /api/internal/register: register (or with `overwrite`, replace) a server, enabled at once.

    Admins reach every server through the admin flag, so no scope changes; other groups get access
    only through add-to-groups."""

    @documented(
        request=RegisterSerializer,
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT},
        errors=INTERNAL_ERRORS + (409,),
    )
    def post(self, request):
        serializer = RegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        path = serializer.validated_data["path"]
        try:
            server, created = server_register(
                actor=principal_of(request),
                path=path,
                overwrite=serializer.validated_data["overwrite"],
                is_enabled=True,
                **serializer.service_fields(),
            )
        except ServerConflict as conflict:
            detail = f"A server is already registered at {path}; send overwrite=true to replace it."
            raise ApiError(
                409, ErrorCode.CONFLICT, detail if conflict.replaceable else str(conflict)
            ) from None
        except DjangoValidationError as exc:
            raise serializers.ValidationError(
                exc.message_dict if hasattr(exc, "error_dict") else exc.messages
            ) from None
        server_refresh(server=server)
        message = f"Server {path} registered." if created else f"Server {path} overwritten."
        body = {"message": message, "service": InternalServerSerializer(server).data}
        return Response(body, status=201 if created else 200)


class InternalRemoveView(InternalView):
    """POST /api/internal/remove: delete a server, its tools and every grant naming its path."""

    @documented(request=ServicePathSerializer, errors=INTERNAL_ERRORS)
    def post(self, request):
        path = valid(ServicePathSerializer, request.data)["service_path"]
        actor = principal_of(request)
        with transaction.atomic():
            scopes = server_delete(actor=actor, server=_server_or_404(path, lock=True))
        return Response({"message": f"Server {path} removed.", "path": path, "scopes_updated": scopes})


class InternalToggleView(InternalView):
    """POST /api/internal/toggle: set `enabled`, or flip the state when it is not sent."""

    @documented(request=ToggleSerializer, errors=INTERNAL_ERRORS)
    def post(self, request):
        data = valid(ToggleSerializer, request.data)
        with transaction.atomic():
            server = _server_or_404(data["service_path"], lock=True)
            enabled = not server.is_enabled if data["enabled"] is None else data["enabled"]
            server_toggle(actor=principal_of(request), server=server, enabled=enabled)
            server_refresh(server=server)
        state = "enabled" if server.is_enabled else "disabled"
        return Response(
            {
                "path": server.path,
                "is_enabled": server.is_enabled,
                "message": f"Server {server.path} {state}.",
            }
        )


class InternalHealthcheckView(InternalView):
    """POST /api/internal/healthcheck: the stored health of every server; queues a check of each
    enabled one (the answer does not wait for those checks)."""

    @documented(request=None, errors=INTERNAL_ERRORS)
    def post(self, request):
        fields = ("path", "health_status", "last_checked_at", "num_tools", "health_detail")
        services = {
            path: {
                "status": status,
                "last_checked_iso": checked.isoformat() if checked else None,
                "num_tools": num_tools,
                "detail": detail,
            }
            for path, status, checked, num_tools, detail in Server.objects.order_by("path").values_list(
                *fields
            )
        }
        servers_refresh()
        return Response({"services": services})


class InternalListView(InternalView):
    """GET /api/internal/list: every server with its health."""

    @documented(errors=INTERNAL_ERRORS)
    def get(self, request):
        servers = Server.objects.order_by("path")
        return Response({"services": InternalServerSerializer(servers, many=True).data})


class InternalCreateGroupView(InternalView):
    """POST /api/internal/create-group."""

    @documented(request=CreateGroupSerializer, errors=INTERNAL_ERRORS + (409, 502))
    def post(self, request):
        data = valid(CreateGroupSerializer, request.data)
        try:
            idp = group_create(
                actor=principal_of(request),
                name=data["group_name"],
                description=data["description"],
                create_in_idp=data["create_in_idp"],
            )
        except GroupRefused as exc:
            raise refused(exc) from None
        return Response(
            {
                "message": f"Group '{data['group_name']}' created.",
                "group_name": data["group_name"],
                "description": data["description"],
                "idp": idp,
            }
        )


class InternalDeleteGroupView(InternalView):
    """POST /api/internal/delete-group."""

    @documented(request=DeleteGroupSerializer, errors=INTERNAL_ERRORS + (409, 502))
    def post(self, request):
        data = valid(DeleteGroupSerializer, request.data)
        try:
            members, idp = group_delete(
                actor=principal_of(request),
                name=data["group_name"],
                force=data["force"],
                delete_from_idp=data["delete_from_idp"],
            )
        except GroupRefused as exc:
            raise refused(exc) from None
        return Response(
            {
                "message": f"Group '{data['group_name']}' deleted.",
                "group_name": data["group_name"],
                "members_removed": members,
                "idp": idp,
            }
        )


class InternalListGroupsView(InternalView):
    """GET /api/internal/list-groups: registry groups, their scopes, and the identity provider's view."""

    @documented(parameters=[ListGroupsQuerySerializer], errors=INTERNAL_ERRORS + (502,))
    def get(self, request):
        query = valid(ListGroupsQuerySerializer, request.query_params)
        return Response(
            groups_overview(include_scopes=query["include_scopes"], include_idp=query["include_keycloak"])
        )
