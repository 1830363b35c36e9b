"""The trusted identity providers' API (/api/trusted-issuers, and the same under /api/internal/ with the
internal API's Basic credentials): administrators list, add, replace and remove the issuers whose
assertions (ID-JAG) the authorization server accepts, through the audited services and the model's one
rule, in the one error format."""

from django.core.exceptions import ValidationError
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
from oauth.api.serializers import (
    TrustedIssuerListSerializer,
    TrustedIssuerSerializer,
    TrustedIssuerWriteSerializer,
)
from oauth.models import TrustedIssuer
from oauth.services import trusted_issuer_delete, trusted_issuer_save

FIELDS = ("issuer", "jwks_url", "jwks", "algorithms", "user_claim", "is_enabled")


def issuer_shown(issuer: TrustedIssuer) -> dict:
    return {
        "id": issuer.pk,
        **{name: getattr(issuer, name) for name in FIELDS},
        "created_at": issuer.created_at.isoformat(),
    }


def _saved(request, issuer: TrustedIssuer, *, created: bool) -> TrustedIssuer:
    """`issuer` with the request's fields, saved by the one rule (400 with `errors` by field)."""
    written = TrustedIssuerWriteSerializer(data=request.data)
    written.is_valid(raise_exception=True)
    for name in FIELDS:
        setattr(issuer, name, written.validated_data[name])
    try:
        return trusted_issuer_save(actor=principal_of(request), issuer=issuer, created=created, fields=FIELDS)
    except ValidationError as refused:
        raise serializers.ValidationError(refused.message_dict) from None


def _found(pk: int) -> TrustedIssuer:
    issuer = TrustedIssuer.objects.filter(pk=pk).first()
    if issuer is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No trusted identity provider has the id {pk}.")
    return issuer


class AdminView(APIView):
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsRegistryAdmin]
    parser_classes = [JSONParser]


class TrustedIssuerListView(AdminView):
    """GET: every trusted identity provider; POST: trust a new one."""

    @documented(responses={200: TrustedIssuerListSerializer}, errors=(401, 403))
    def get(self, request):
        return Response({"issuers": [issuer_shown(issuer) for issuer in TrustedIssuer.objects.all()]})

    @documented(
        request=TrustedIssuerWriteSerializer,
        responses={201: TrustedIssuerSerializer},
        errors=(400, 401, 403, 413),
    )
    def post(self, request):
        return Response(issuer_shown(_saved(request, TrustedIssuer(), created=True)), status=201)


class TrustedIssuerDetailView(AdminView):
    """GET, PUT (the whole issuer) and DELETE one trusted identity provider."""

    @documented(responses={200: TrustedIssuerSerializer}, errors=(401, 403, 404))
    def get(self, request, issuer_id):
        return Response(issuer_shown(_found(issuer_id)))

    @documented(
        request=TrustedIssuerWriteSerializer,
        responses={200: TrustedIssuerSerializer},
        errors=(400, 401, 403, 404, 413),
    )
    def put(self, request, issuer_id):
        return Response(issuer_shown(_saved(request, _found(issuer_id), created=False)))

    @documented(responses={204: None}, errors=(401, 403, 404))
    def delete(self, request, issuer_id):
        trusted_issuer_delete(actor=principal_of(request), issuer=_found(issuer_id))
        return Response(status=204)


class InternalTrustedIssuerListView(TrustedIssuerListView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]


class InternalTrustedIssuerDetailView(TrustedIssuerDetailView):
    """The same, on the internal administration API."""

    authentication_classes = [InternalBasicAuthentication]
