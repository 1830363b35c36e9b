"""`X-API-Key` authentication and the per-key rate limit of the metrics service."""

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission

from core import ratelimit
from core.errors import ApiError, ErrorCode
from metrics.models import ApiKey
from metrics.selectors import api_key_for

HEADER = "X-API-Key"
PERIOD_SECONDS = 60


class ApiKeyAuthentication(BaseAuthentication):
    """The caller is the service whose active key hashes to the `X-API-Key` header."""

    def authenticate(self, request):
        raw = request.headers.get(HEADER)
        if not raw:
            return None
        key = api_key_for(raw)
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        return (None, key)

    def authenticate_header(self, request) -> str:
        return HEADER  # a 401 names the header to send


class HasApiKey(BasePermission):
    message = f"Send the service's API key in the {HEADER} header."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ApiKey)


class HasAdminKey(HasApiKey):
    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        if not request.auth.is_admin:
            raise exceptions.PermissionDenied("This endpoint needs a key marked admin.")
        return True


def rate_limit_of(key: ApiKey) -> int:
    return key.rate_limit or settings.METRICS_RATE_LIMIT


def _bucket(key: ApiKey) -> str:
    return f"metrics-key:{key.pk}"


def rate_limit_take(key: ApiKey) -> ratelimit.Decision:
    """Take a token from the key's bucket (shared by every process through Redis); 429 when empty."""
    decision = ratelimit.take(_bucket(key), capacity=rate_limit_of(key), period_seconds=PERIOD_SECONDS)
    if not decision.allowed:
        raise ApiError(
            429,
            ErrorCode.THROTTLED,
            f"Over the limit of {decision.limit} requests per minute; retry in {decision.retry_after} s.",
            headers=decision.headers(),
        )
    return decision


def rate_limit_peek(key: ApiKey) -> ratelimit.Decision:
    """The key's bucket as it is, without taking a token."""
    return ratelimit.peek(_bucket(key), capacity=rate_limit_of(key), period_seconds=PERIOD_SECONDS)
