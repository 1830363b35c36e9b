"""The OpenAPI 3 description of the JSON APIs (drf-spectacular): how each authentication class appears
as a security scheme, the one error body, and `documented`, the decorator every view uses so its
errors are described the same way. Served at /api/schema/ (Swagger UI at /api/docs/); the metrics
service serves its own at /api/schema/ on its port."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from core.errors import ErrorCode, V01Code


class ErrorSerializer(serializers.Serializer):
    """Every error outside /v0.1 (docs/errors.md)."""

    detail = serializers.CharField()
    error_code = serializers.ChoiceField(choices=[code.value for code in ErrorCode])
    request_id = serializers.CharField()
    errors = serializers.JSONField(required=False, help_text="per field (or per metric) reasons")


V01Error = inline_serializer(
    "V01Error",
    {
        "error": inline_serializer(
            "V01ErrorBody",
            {
                "code": serializers.ChoiceField(choices=[code.value for code in V01Code]),
                "message": serializers.CharField(),
            },
        )
    },
)

# How the project's own serializer fields appear (they accept more than one spelling).
TEXT_OR_LIST = {
    "oneOf": [
        {"type": "string", "description": "comma-separated"},
        {"type": "array", "items": {"type": "string"}},
    ]
}

DEFAULT_ERRORS = (400, 401, 403, 404, 413, 429)


def documented(
    *,
    request=None,
    responses=None,
    parameters=None,
    errors=DEFAULT_ERRORS,
    error_body=ErrorSerializer,
    **kwargs,
):
    """`extend_schema` with the error answers every endpoint may give, in the one error format."""
    described = dict(responses if responses is not None else {200: OpenApiTypes.OBJECT})
    for status in errors:
        described.setdefault(status, error_body)
    return extend_schema(request=request, responses=described, parameters=parameters, **kwargs)


def path_parameter(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.PATH, description=description)


def header_parameter(name: str, description: str, *, required: bool = False) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.HEADER, required=required, description=description)


# -- how each authentication class appears -----------------------------------------------------------


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.RegistrySessionAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}


class InternalBasicScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.InternalBasicAuthentication"
    name = "internalBasic"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "basic", "description": "ADMIN_USER / ADMIN_PASSWORD"}


class MetricsKeyScheme(OpenApiAuthenticationExtension):
    target_class = "metrics.api.authentication.ApiKeyAuthentication"
    name = "metricsKey"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-API-Key"}
