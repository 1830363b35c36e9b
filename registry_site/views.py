"""Project-level endpoints: the load-balancer health check."""

import logging

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from registry_site.errors import ErrorCode, error_response

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
