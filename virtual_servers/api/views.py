"""The virtual server API (/api/virtual-servers...): administrators manage definitions with bearer tokens
(or the console's session), in the one error format; a definition is always sent whole and checked by
the one rule (virtual_servers/rules.py), refusals answered 400 with `errors` by field."""

from django.db import IntegrityError
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsRegistryAdmin
from accounts.authentication import (
    BearerAuthentication,
    InternalBasicAuthentication,
    RegistrySessionAuthentication,
    principal_of,
)
from core.errors import ApiError, ErrorCode
from core.openapi import documented, path_parameter
from core.validators import normalize_path
from virtual_servers.models import VirtualServer
from virtual_servers.rules import DefinitionRefused
from virtual_servers.selectors import definition_of, left_out, shown_definitions
from virtual_servers.services import virtual_server_create, virtual_server_delete, virtual_server_update

VIRTUAL_PATH = path_parameter("virtual_path", "the virtual server's path, e.g. team")


def _virtual_or_404(virtual_path: str) -> VirtualServer:
    path = normalize_path(virtual_path)
    virtual = VirtualServer.objects.filter(path=path).first()
    if virtual is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No virtual server has the path {path}.")
    return virtual


def _shown(virtual: VirtualServer) -> dict:
    return {**definition_of(virtual), "left_out": left_out(virtual)}


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"definition": ["A definition is a JSON object."]})
    return request.data


def _refused(refused: DefinitionRefused) -> serializers.ValidationError:
    return serializers.ValidationError({field: [problem] for field, problem in refused.problems.items()})


class VirtualServerView(APIView):
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsRegistryAdmin]


class VirtualServerListView(VirtualServerView):
    """GET: every virtual server's definition; POST: create one (`path` and the definition)."""

    @documented(errors=(401, 403))
    def get(self, request):
        return Response({"virtual_servers": shown_definitions()})

    @documented(
        request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}, errors=(400, 401, 403, 413)
    )
    def post(self, request):
        body = _body(request)
        path = body.get("path")
        if not isinstance(path, str):
            raise serializers.ValidationError({"path": ["Give the virtual server's path."]})
        try:
            virtual = virtual_server_create(actor=principal_of(request), path=path, definition=body)
        except DefinitionRefused as refused:
            raise _refused(refused) from None
        except IntegrityError:  # lost a race with another definition of the same path
            raise ApiError(
                400, ErrorCode.CONFLICT, f"A virtual server already has the path {path}."
            ) from None
        return Response(_shown(virtual), status=201)


class VirtualServerDetailView(VirtualServerView):
    """GET, PUT (the whole definition) and DELETE one virtual server."""

    @documented(parameters=[VIRTUAL_PATH], errors=(401, 403, 404))
    def get(self, request, virtual_path):
        return Response(_shown(_virtual_or_404(virtual_path)))

    @documented(parameters=[VIRTUAL_PATH], request=OpenApiTypes.OBJECT, errors=(400, 401, 403, 404, 413))
    def put(self, request, virtual_path):
        virtual = _virtual_or_404(virtual_path)
        try:
            virtual = virtual_server_update(
                actor=principal_of(request), virtual=virtual, definition=_body(request)
            )
        except DefinitionRefused as refused:
            raise _refused(refused) from None
        return Response(_shown(virtual))

    @documented(parameters=[VIRTUAL_PATH], responses={204: None}, errors=(401, 403, 404))
    def delete(self, request, virtual_path):
        virtual_server_delete(actor=principal_of(request), virtual=_virtual_or_404(virtual_path))
        return Response(status=204)


class InternalVirtualServerListView(VirtualServerListView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]


class InternalVirtualServerDetailView(VirtualServerDetailView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]
