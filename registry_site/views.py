"""Project-level endpoints: the load-balancer health check."""

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from registry_site.errors import (
    V01_PREFIXES,
    ErrorCode,
    error_response,
    speaks_json,
    v01_error_response,
)

logger = logging.getLogger(__name__)


@require_GET
def health(request):
    """200 while the database answers a query; 503 with the reason otherwise."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("health check: database unavailable: %s", exc)
        connection.close()
        return error_response(
            request, "The database is unavailable.", ErrorCode.DATABASE_UNAVAILABLE, status=503
        )
    return JsonResponse({"status": "healthy", "service": settings.REGISTRY_SERVICE_NAME})


def not_found(request, exception=None):
    """404 for unknown URLs: the JSON error formats under the APIs, Django's page elsewhere."""
    if request.path.startswith(V01_PREFIXES):
        return v01_error_response(404, "Not found")
    if speaks_json(request):
        return error_response(request, "Not found.", ErrorCode.NOT_FOUND, status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def bad_request(request, exception=None):
    """400 raised outside a view's own checks (a suspicious request, a body over the upload limit)."""
    if request.path.startswith(V01_PREFIXES):
        return v01_error_response(400, "Bad request")
    if speaks_json(request):
        return error_response(request, "Bad request.", ErrorCode.BAD_REQUEST, status=400)
    from django.views.defaults import bad_request as django_bad_request

    return django_bad_request(request, exception)


def not_found_json(request, exception=None):
    """404 of a service that speaks only JSON (the metrics service)."""
    return error_response(request, "Not found.", ErrorCode.NOT_FOUND, status=404)


def server_error(request):
    """500 without a stack trace; the request id ties the answer to the logged traceback."""
    if request.path.startswith(V01_PREFIXES):
        return v01_error_response(500, "Internal server error")
    if speaks_json(request):
        return error_response(request, "Internal server error.", ErrorCode.SERVER_ERROR, status=500)
    from django.views.defaults import server_error as django_server_error

    return django_server_error(request)
