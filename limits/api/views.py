"""The limits API (/api/limits, /api/quarantines, and the same under /api/internal/): administrators
manage limits and quarantines with bearer tokens, the console's session or the internal API's Basic
credentials, in the one error format; everything written is checked by the one rule (limits/rules.py),
refusals answered 400 with `errors` by field."""

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
from core.openapi import documented
from core.parsers import JSONParser
from limits.api.serializers import (
    LimitListSerializer,
    LimitSerializer,
    LimitWriteSerializer,
    QuarantineListSerializer,
    QuarantineSerializer,
    QuarantineWriteSerializer,
)
from limits.models import Limit, Quarantine
from limits.rules import LimitRefused
from limits.services import limit_remove, limit_set, quarantine_lift, quarantine_set

LIMIT_FIELDS = ("caller_kind", "caller", "target_kind", "target", "windows", "counts", "fail_open", "note")
TEXT_FIELDS = ("caller_kind", "caller", "target_kind", "target", "note")


def limit_shown(limit: Limit) -> dict:
    return {"id": limit.pk, **{name: getattr(limit, name) for name in LIMIT_FIELDS}}


def quarantine_shown(quarantine: Quarantine) -> dict:
    return {
        "id": quarantine.pk,
        "kind": quarantine.kind,
        "name": quarantine.name,
        "reason": quarantine.reason,
        "created_at": quarantine.created_at.isoformat(),
    }


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"body": ["A JSON object."]})
    return request.data


def _limit_fields(body: dict) -> dict:
    fields = {name: body[name] for name in LIMIT_FIELDS if name in body}
    for name in TEXT_FIELDS:
        if name in fields and not isinstance(fields[name], str):
            raise serializers.ValidationError({name: ["Text."]})
    if "fail_open" in fields and not isinstance(fields["fail_open"], bool):
        raise serializers.ValidationError({"fail_open": ["true or false."]})
    if "windows" not in fields:
        raise serializers.ValidationError({"windows": ["Give the limit's windows."]})
    return fields


def _refused(refused: LimitRefused) -> serializers.ValidationError:
    return serializers.ValidationError({field: [problem] for field, problem in refused.problems.items()})


def _found(model, pk: int, what: str):
    found = model.objects.filter(pk=pk).first()
    if found is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No {what} has the id {pk}.")
    return found


class AdminView(APIView):
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsRegistryAdmin]
    parser_classes = [JSONParser]  # a limit's windows are a list of objects: JSON only


class LimitListView(AdminView):
    """GET: every limit; POST: set a new one."""

    @documented(responses={200: LimitListSerializer}, errors=(401, 403))
    def get(self, request):
        return Response({"limits": [limit_shown(limit) for limit in Limit.objects.all()]})

    @documented(request=LimitWriteSerializer, responses={201: LimitSerializer}, errors=(400, 401, 403, 413))
    def post(self, request):
        try:
            limit = limit_set(actor=principal_of(request), **_limit_fields(_body(request)))
        except LimitRefused as refused:
            raise _refused(refused) from None
        return Response(limit_shown(limit), status=201)


class LimitDetailView(AdminView):
    """GET, PUT (the whole limit) and DELETE one limit."""

    @documented(responses={200: LimitSerializer}, errors=(401, 403, 404))
    def get(self, request, limit_id):
        return Response(limit_shown(_found(Limit, limit_id, "limit")))

    @documented(
        request=LimitWriteSerializer, responses={200: LimitSerializer}, errors=(400, 401, 403, 404, 413)
    )
    def put(self, request, limit_id):
        limit = _found(Limit, limit_id, "limit")
        try:
            limit = limit_set(actor=principal_of(request), limit=limit, **_limit_fields(_body(request)))
        except LimitRefused as refused:
            raise _refused(refused) from None
        return Response(limit_shown(limit))

    @documented(responses={204: None}, errors=(401, 403, 404))
    def delete(self, request, limit_id):
        limit_remove(actor=principal_of(request), limit=_found(Limit, limit_id, "limit"))
        return Response(status=204)


class QuarantineListView(AdminView):
    """GET: every quarantine; POST: quarantine a caller or a target (`kind`, `name`, `reason`)."""

    @documented(responses={200: QuarantineListSerializer}, errors=(401, 403))
    def get(self, request):
        return Response({"quarantines": [quarantine_shown(q) for q in Quarantine.objects.all()]})

    @documented(
        request=QuarantineWriteSerializer, responses={201: QuarantineSerializer}, errors=(400, 401, 403, 413)
    )
    def post(self, request):
        body = _body(request)
        given = {name: body.get(name, "") for name in ("kind", "name", "reason")}
        if not all(isinstance(value, str) for value in given.values()):
            raise serializers.ValidationError({"body": ["kind, name and reason are text."]})
        try:
            quarantine = quarantine_set(actor=principal_of(request), **given)
        except LimitRefused as refused:
            raise _refused(refused) from None
        return Response(quarantine_shown(quarantine), status=201)


class QuarantineDetailView(AdminView):
    """GET one quarantine; DELETE lifts it."""

    @documented(responses={200: QuarantineSerializer}, errors=(401, 403, 404))
    def get(self, request, quarantine_id):
        return Response(quarantine_shown(_found(Quarantine, quarantine_id, "quarantine")))

    @documented(responses={204: None}, errors=(401, 403, 404))
    def delete(self, request, quarantine_id):
        quarantine_lift(
            actor=principal_of(request), quarantine=_found(Quarantine, quarantine_id, "quarantine")
        )
        return Response(status=204)


class InternalLimitListView(LimitListView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]


class InternalLimitDetailView(LimitDetailView):
    """The same, on the internal administration API."""

    authentication_classes = [InternalBasicAuthentication]


class InternalQuarantineListView(QuarantineListView):
    """The same, on the internal administration API."""

    authentication_classes = [InternalBasicAuthentication]


class InternalQuarantineDetailView(QuarantineDetailView):
    """The same, on the internal administration API."""

    authentication_classes = [InternalBasicAuthentication]
