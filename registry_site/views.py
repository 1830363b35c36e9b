"""Project-level endpoints: the load-balancer health check."""

import logging
import sys

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from core.errors import (
    ErrorCode,
    error_format,
    error_response,
    v01_error_response,
)
from core.outages import outage_of, outage_response

logger = logging.getLogger(__name__)


@require_GET
def favicon(request):
    """GET /favicon.ico: the console's icon, for pages without an icon link (the browsable API, the
    schema). Resolved per request: the static files' manifest is read once it exists."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


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


def _error(request, status: int, message: str, code: ErrorCode, page):
    """An error raised outside the views' own checks, in the format the path speaks: `/v0.1`'s, the one
    JSON format under the APIs and on the metrics service, Django's page (from `page()`) elsewhere."""
    answer_format = error_format(request)
    if answer_format == "v01":
        return v01_error_response(status, message)
    if answer_format == "json":
        return error_response(request, f"{message}.", code, status=status)
    return page()


def not_found(request, exception=None):
    """404 for unknown URLs."""
    from django.views.defaults import page_not_found

    return _error(request, 404, "Not found", ErrorCode.NOT_FOUND, lambda: page_not_found(request, exception))


def bad_request(request, exception=None):
    """400 raised outside a view's own checks (a suspicious request, a body over the upload limit)."""
    from django.views.defaults import bad_request as django_bad_request

    return _error(
        request, 400, "Bad request", ErrorCode.BAD_REQUEST, lambda: django_bad_request(request, exception)
    )


def permission_denied(request, exception=None):
    """403 raised outside a view's own checks (Django's PermissionDenied, a failed CSRF check)."""
    from django.views.defaults import permission_denied as django_permission_denied

    return _error(
        request,
        403,
        "Permission denied",
        ErrorCode.PERMISSION_DENIED,
        lambda: django_permission_denied(request, exception),
    )


def csrf_failure(request, reason=""):
    """A form posted without a valid CSRF token: a browser gets the styled 403 page saying what to do,
    other clients the error format of the path."""
    if request.get_preferred_type(["application/json", "text/html"]) == "text/html":
        return render(request, "403.html", {"csrf_failed": True}, status=403)
    return permission_denied(request)


def server_error(request):
    """500 without a stack trace; the request id ties the answer to the logged traceback. When what
    failed was PostgreSQL or Redis not answering (core/outages.py), 503 with a Retry-After."""
    from django.views.defaults import server_error as django_server_error

    outage = outage_of(sys.exc_info()[1])  # empty under ASGI, where this runs in another thread
    if outage is not None:
        return outage_response(request, outage)
    return _error(
        request, 500, "Internal server error", ErrorCode.SERVER_ERROR, lambda: django_server_error(request)
    )
