"""Django REST framework: one error format for every JSON API but /v0.1."""

REST_FRAMEWORK = {
    # Bearer first: a request without credentials gets 401 with `WWW-Authenticate: Bearer`.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerAuthentication",
        "accounts.authentication.RegistrySessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies through the shared input rule (depth limit, storable text); forms for the pages' posts.
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # JSON for every client but a browser, which gets DRF's browsable API (templates/rest_framework/: no
    # inline script or style, the registry's login and logout).
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "core.errors.drf_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# The OpenAPI 3 schema of the JSON APIs (/api/schema/, Swagger UI at /api/docs/; docs/api.md).
SPECTACULAR_SETTINGS = {
    "TITLE": "MCP Gateway Registry API",
    "DESCRIPTION": (
        "Registry of MCP servers and A2A agents. Errors outside /v0.1 are "
        "`{detail, error_code, request_id}` (see docs/errors.md); /v0.1 follows the official MCP Registry."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {},
}
