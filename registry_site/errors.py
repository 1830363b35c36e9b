"""The one error format of every JSON API but /v0.1: {"detail", "error_code", "request_id"}.

`ErrorCode` is the catalogue; docs/errors.md lists the same codes and a test keeps the two equal.
"""

from enum import StrEnum

from django.http import JsonResponse
from rest_framework import exceptions
from rest_framework.views import exception_handler


class ErrorCode(StrEnum):
    BAD_REQUEST = "bad_request"
    VALIDATION_ERROR = "validation_error"
    NOT_AUTHENTICATED = "not_authenticated"
    AUTHENTICATION_FAILED = "authentication_failed"
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    CONFLICT = "conflict"
    THROTTLED = "throttled"
    DATABASE_UNAVAILABLE = "database_unavailable"
    SERVER_ERROR = "server_error"


# DRF's own codes mapped onto the catalogue.
_DRF_CODES = {
    exceptions.ParseError: ErrorCode.BAD_REQUEST,
    exceptions.ValidationError: ErrorCode.VALIDATION_ERROR,
    exceptions.NotAuthenticated: ErrorCode.NOT_AUTHENTICATED,
    exceptions.AuthenticationFailed: ErrorCode.AUTHENTICATION_FAILED,
    exceptions.PermissionDenied: ErrorCode.PERMISSION_DENIED,
    exceptions.NotFound: ErrorCode.NOT_FOUND,
    exceptions.MethodNotAllowed: ErrorCode.METHOD_NOT_ALLOWED,
    exceptions.UnsupportedMediaType: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
    exceptions.Throttled: ErrorCode.THROTTLED,
}


def error_body(request, detail: str, code: ErrorCode) -> dict:
    """The error body, carrying the request id the middleware gave this request."""
    return {"detail": detail, "error_code": str(code), "request_id": getattr(request, "request_id", "")}


def error_response(request, detail: str, code: ErrorCode, status: int) -> JsonResponse:
    return JsonResponse(error_body(request, detail, code), status=status)


def drf_exception_handler(exc, context):
    """DRF's handler, reshaped into the one error format."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), ErrorCode.BAD_REQUEST)
    if isinstance(exc, exceptions.ValidationError):
        detail = "Invalid input."
        extra = {"errors": response.data}
    else:
        detail = str(response.data.get("detail", exc)) if isinstance(response.data, dict) else str(exc)
        extra = {}
    response.data = {**error_body(context["request"], detail, code), **extra}
    return response
