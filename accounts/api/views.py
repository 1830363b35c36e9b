"""JSON endpoints of identity: providers, current user, tokens, and the reverse proxy's check."""

from drf_spectacular.utils import inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsAuthenticatedPrincipal, IsRegistryAdmin
from accounts.api.serializers import ClientCredentialsSerializer, TokenRequestSerializer
from accounts.authentication import basic_credentials, principal_of
from accounts.selectors import login_providers, token_revocable_by
from accounts.services import (
    TokenRequestError,
    client_credentials_exchange,
    registry_service_token,
    token_revoke,
    user_token_issue,
)
from core.errors import ApiError, ErrorCode
from core.openapi import documented
from core.parsers import JSONParser

TOKEN = inline_serializer(
    "TokenGrant",
    {
        "access_token": serializers.CharField(),
        "token_type": serializers.CharField(),
        "expires_in": serializers.IntegerField(),
        "refresh_token": serializers.CharField(allow_null=True),
        "scope": serializers.CharField(),
    },
)
ME = inline_serializer(
    "Me",
    {
        "username": serializers.CharField(),
        "email": serializers.CharField(),
        "auth_method": serializers.CharField(allow_null=True),
        "provider": serializers.CharField(allow_null=True),
        "scopes": serializers.ListField(child=serializers.CharField()),
        "groups": serializers.ListField(child=serializers.CharField()),
        "is_admin": serializers.BooleanField(),
    },
)
PROVIDERS = inline_serializer(
    "Providers", {"providers": serializers.ListField(child=serializers.DictField())}
)
REVOKED = inline_serializer(
    "RevokedToken",
    {
        "jti": serializers.CharField(),
        "revoked_at": serializers.DateTimeField(),
    },
)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def _token_error(error: TokenRequestError) -> ApiError:
    return ApiError(error.status, error.code, str(error), error.headers)


class ProvidersView(APIView):
    """GET /api/auth/providers: only the identity providers configured from the environment."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @documented(responses={200: PROVIDERS}, errors=())
    def get(self, request):
        return Response({"providers": login_providers(request)})


class MeView(APIView):
    """GET /api/auth/me: who the session (or token) belongs to and what it may do."""

    permission_classes = [IsAuthenticatedPrincipal]

    @documented(responses={200: ME}, errors=(401,))
    def get(self, request):
        principal = principal_of(request)
        return Response(
            {
                "username": principal.username,
                "email": principal.email,
                "auth_method": principal.auth_method,
                "provider": principal.provider,
                "scopes": list(principal.scopes),
                "groups": list(principal.groups),
                "is_admin": principal.is_admin,
            }
        )


class TokenGenerateView(APIView):
    """POST /api/tokens/generate: a token for the caller, at most as strong as the caller."""

    permission_classes = [IsAuthenticatedPrincipal]

    @documented(request=TokenRequestSerializer, responses={200: TOKEN}, errors=(400, 401, 403, 413, 429))
    def post(self, request):
        principal = principal_of(request)
        serializer = TokenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            grant = user_token_issue(principal=principal, **serializer.validated_data)
        except TokenRequestError as error:
            raise _token_error(error) from None
        return Response(grant.as_response(), headers={**grant.headers, **NO_STORE})


class TokenView(APIView):
    """DELETE /api/tokens/<jti>: revoke a token and every token obtained with it; its holder (bearer or
    session) or an administrator. Revoking a revoked token answers the same; anyone else's is 404."""

    permission_classes = [IsAuthenticatedPrincipal]

    @documented(responses={200: REVOKED}, errors=(401, 403, 404))
    def delete(self, request, jti: str):
        token = token_revocable_by(principal_of(request), jti)
        if token is None:
            raise ApiError(404, ErrorCode.NOT_FOUND, "No such token.")
        revoked = token_revoke(actor=principal_of(request), token=token)
        return Response({"jti": revoked.jti, "revoked_at": revoked.revoked_at}, headers=NO_STORE)


class ClientCredentialsTokenView(APIView):
    """POST /api/auth/token with grant_type=client_credentials: a short-lived service-account token."""

    authentication_classes = []
    permission_classes = [AllowAny]
    parser_classes = [FormParser, MultiPartParser, JSONParser]

    @documented(request=ClientCredentialsSerializer, responses={200: TOKEN}, errors=(400, 401, 413))
    def post(self, request):
        serializer = ClientCredentialsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if data["grant_type"] != "client_credentials":
            raise ApiError(
                400, ErrorCode.UNSUPPORTED_GRANT_TYPE, "Only grant_type=client_credentials is supported."
            )
        client_id, client_secret = self._basic_client(request) or (
            data.get("client_id"),
            data.get("client_secret"),
        )
        if not client_id or not client_secret:
            raise ApiError(
                401, ErrorCode.INVALID_CLIENT, "Client credentials are required.", self._challenge()
            )
        try:
            grant = client_credentials_exchange(client_id=client_id, client_secret=client_secret)
        except TokenRequestError as error:
            raise ApiError(error.status, error.code, str(error), self._challenge()) from None
        return Response(grant.as_response(), headers=NO_STORE)

    @classmethod
    def _basic_client(cls, request):
        try:
            credentials = basic_credentials(request)
        except exceptions.AuthenticationFailed as failed:
            raise ApiError(401, ErrorCode.INVALID_CLIENT, str(failed.detail), cls._challenge()) from None
        return credentials[:2] if credentials is not None else None

    @staticmethod
    def _challenge() -> dict:
        return {"WWW-Authenticate": 'Basic realm="mcp-gateway-registry token"'}


class AdminTokenView(APIView):
    """GET /api/admin/tokens: a fresh token of the registry's own service account, for admins."""

    permission_classes = [IsRegistryAdmin]

    @documented(responses={200: TOKEN}, errors=(401, 403, 503))
    def get(self, request):
        try:
            grant = registry_service_token()
        except TokenRequestError as error:
            raise _token_error(error) from None
        return Response(grant.as_response(), headers=NO_STORE)
