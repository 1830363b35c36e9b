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
        "registry_site.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "registry_site.errors.drf_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
