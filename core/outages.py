"""The one rule for a dependency that stops answering (PostgreSQL or Redis, during a restart, a failover or
a network cut): every surface answers 503 with a Retry-After and the code of what is down, never 500.

Views and services do not catch these errors. A view's reaches `OutageMiddleware.process_exception`
(registry_site/middleware.py); one raised in a middleware reaches Django's handler500
(registry_site/views.py). Both answer with `outage_response`."""

from dataclasses import dataclass

import redis
from django.db import InterfaceError, OperationalError

from core.errors import ErrorCode, error_format, error_response, v01_error_response

RETRY_AFTER_SECONDS = 5

# A Redis that refuses connections, times out, is still loading its data after a restart, or was a
# master demoted by a failover (the next connection finds the new one).
REDIS_OUTAGES = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.exceptions.BusyLoadingError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.TryAgainError,
)
# A PostgreSQL that refuses connections, restarts under an open connection, or leaves the pool empty.
DATABASE_OUTAGES = (OperationalError, InterfaceError)


@dataclass(frozen=True)
class Outage:
    code: ErrorCode
    message: str


# Refusals of a Redis that is up but cannot take writes now: no replica good enough for the master's
# min-replicas-to-write, or a replica that lost its master (error prefixes, as Redis sends them).
REDIS_REFUSALS = ("NOREPLICAS", "MASTERDOWN", "EXECABORT Transaction discarded because of: NOREPLICAS")


def outage_of(exc: BaseException | None) -> Outage | None:
    """What is down, when `exc` (or what caused it) says a dependency stopped answering."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, REDIS_OUTAGES) or (
            isinstance(exc, redis.ResponseError) and str(exc).startswith(REDIS_REFUSALS)
        ):
            return Outage(ErrorCode.REDIS_UNAVAILABLE, "Redis is unavailable; retry shortly")
        if isinstance(exc, DATABASE_OUTAGES) or _is_pool_timeout(exc):
            return Outage(ErrorCode.DATABASE_UNAVAILABLE, "The database is unavailable; retry shortly")
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def _is_pool_timeout(exc: BaseException) -> bool:
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # pragma: no cover - psycopg_pool is in requirements.txt
        return False
    return isinstance(exc, PoolTimeout)


def outage_response(request, outage: Outage):
    """503 in the format of the path (a page gets a page rendered without the database or Redis)."""
    from django.http import HttpResponse
    from django.template import loader

    answer_format = error_format(request)
    if answer_format == "v01":
        response = v01_error_response(503, outage.message)
    elif answer_format == "json":
        response = error_response(request, f"{outage.message}.", outage.code, status=503)
    else:
        page = loader.render_to_string("503.html", {"message": outage.message})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
