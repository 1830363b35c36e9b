"""The one error format of every JSON API but /v0.1: {"detail", "error_code", "request_id"}; and the
official MCP Registry format of /v0.1: {"error": {"code", "message"}}.

`ErrorCode` is the catalogue; docs/errors.md lists the same codes and a test keeps the two equal.
"""

from enum import StrEnum

from django.http import JsonResponse
from rest_framework import exceptions

V01_PREFIXES = ("/v0.1/", "/v0/")
JSON_PREFIXES = ("/api/", "/v0.1/", "/v0/", "/validate", "/.well-known/")
SERVICE_ENVIRON_KEY = "registry.service"  # set by the entry of another service (metrics) in the environ
METRICS_URLCONF = "registry_site.metrics_urls"  # the metrics service's URLs: JSON only


class ErrorCode(StrEnum):
    BAD_REQUEST = "bad_request"
    VALIDATION_ERROR = "validation_error"
    NOT_AUTHENTICATED = "not_authenticated"
    AUTHENTICATION_FAILED = "authentication_failed"
    TOKEN_MALFORMED = "token_malformed"
    TOKEN_INVALID = "token_invalid"
    TOKEN_EXPIRED = "token_expired"
    TOKEN_REVOKED = "token_revoked"
    TOKEN_AUDIENCE = "token_audience"
    INSUFFICIENT_SCOPE = "insufficient_scope"
    INVALID_CLIENT = "invalid_client"
    UNSUPPORTED_GRANT_TYPE = "unsupported_grant_type"
    PERMISSION_DENIED = "permission_denied"
    VIEWING_AS = "viewing_as"
    CONNECTION_REQUIRED = "connection_required"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    CONFLICT = "conflict"
    CONFIRMATION_REQUIRED = "confirmation_required"
    THROTTLED = "throttled"
    INTERNAL_API_DISABLED = "internal_api_disabled"
    IDP_NOT_CONFIGURED = "idp_not_configured"
    IDP_UNAVAILABLE = "idp_unavailable"
    SERVICE_ACCOUNT_NOT_CONFIGURED = "service_account_not_configured"
    DATABASE_UNAVAILABLE = "database_unavailable"
    REDIS_UNAVAILABLE = "redis_unavailable"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    UPSTREAM_TIMEOUT = "upstream_timeout"
    SERVER_ERROR = "server_error"
    SEARCH_ERROR = "SEARCH_ERROR"
    NOT_IMPLEMENTED = "not_implemented"


class V01Code(StrEnum):
    """Codes of the /v0.1 error body (the official registry's style)."""

    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    INVALID_PARAMETER = "INVALID_PARAMETER"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    RATE_LIMITED = "RATE_LIMITED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"


_V01_BY_STATUS = {
    400: V01Code.INVALID_PARAMETER,
    401: V01Code.UNAUTHORIZED,
    403: V01Code.FORBIDDEN,
    404: V01Code.NOT_FOUND,
    405: V01Code.METHOD_NOT_ALLOWED,
    429: V01Code.RATE_LIMITED,
    501: V01Code.NOT_IMPLEMENTED,
}

# DRF's own exceptions mapped onto the catalogue when they carry no catalogue code of their own.
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
_CATALOGUE = {code.value for code in ErrorCode}


class ApiError(exceptions.APIException):
    """An error a view or service wants answered as is: status, catalogue code and message."""

    def __init__(self, status: int, code: ErrorCode | str, detail: str, headers: dict | None = None):
        super().__init__(detail=detail, code=str(code))
        self.status_code = status
        self.extra_headers = headers or {}


def error_body(request, detail: str, code: ErrorCode | str) -> dict:
    """The error body, carrying the request id the middleware gave this request."""
    return {"detail": detail, "error_code": str(code), "request_id": getattr(request, "request_id", "")}


def error_response(request, detail: str, code: ErrorCode | str, status: int) -> JsonResponse:
    return JsonResponse(error_body(request, detail, code), status=status)


def v01_error_response(status: int, message: str) -> JsonResponse:
    code = _V01_BY_STATUS.get(status, V01Code.INTERNAL_ERROR)
    return JsonResponse({"error": {"code": str(code), "message": message}}, status=status)


def error_format(request) -> str:
    """How errors of this request are answered: "json" (`{detail, error_code, request_id}`) on every path
    of the metrics service and under the registry's APIs, "v01" under `/v0.1` and `/v0`, "page" for
    the registry's pages."""
    from django.conf import settings

    if (getattr(request, "urlconf", None) or settings.ROOT_URLCONF) == METRICS_URLCONF:
        return "json"
    if request.path.startswith(V01_PREFIXES):
        return "v01"
    return "json" if request.path.startswith(JSON_PREFIXES) else "page"


def invalid_input_response(request, field: str, message: str):
    """400 for input refused before any view ran, in the format the path speaks (a page gets a page)."""
    answer_format = error_format(request)
    if answer_format == "v01":
        return v01_error_response(400, f"{field}: {message}")
    if answer_format == "json":
        body = {
            **error_body(request, "Invalid input.", ErrorCode.VALIDATION_ERROR),
            "errors": {field: [message]},
        }
        return JsonResponse(body, status=400)
    from django.http import HttpResponseBadRequest
    from django.utils.html import escape

    return HttpResponseBadRequest(f"<h1>Bad request</h1><p>{escape(field)}: {escape(message)}</p>")


def refusal_response(request, status: int, code: ErrorCode, detail: str):
    """A refusal decided before any view ran (a middleware's), in the format the path speaks."""
    answer_format = error_format(request)
    if answer_format == "v01":
        return v01_error_response(status, detail)
    if answer_format == "json":
        return error_response(request, detail, code, status)
    from django.shortcuts import render

    return render(request, f"{status}.html", {"reason": detail}, status=status)


def _code_of(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str) and codes in _CATALOGUE:
        return codes
    return next((str(c) for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), ErrorCode.BAD_REQUEST)


def _detail_of(response_data, exc) -> str:
    if isinstance(response_data, dict) and "detail" in response_data:
        return str(response_data["detail"])
    return str(exc.detail) if isinstance(exc.detail, str) else str(exc)


def _first_invalid(errors) -> str:
    """`field: message` of the first error of a ValidationError, for the one-message /v0.1 format."""
    if isinstance(errors, dict) and errors:
        field, messages = next(iter(errors.items()))
        first = messages[0] if isinstance(messages, list) and messages else messages
        return f"{field}: {first}"
    if isinstance(errors, list) and errors:
        return str(errors[0])
    return "Invalid parameters."


def drf_exception_handler(exc, context):
    """DRF's handler, reshaped into the one error format (or the /v0.1 one under /v0.1)."""
    from django.core.exceptions import PermissionDenied, RequestDataTooBig
    from django.http import Http404
    from rest_framework.views import exception_handler  # DRF's views import the auth classes, which import us

    if isinstance(exc, RequestDataTooBig):  # the ASGI guard refuses these first; the test client reaches here
        exc = ApiError(413, ErrorCode.PAYLOAD_TOO_LARGE, "The request body is too large.")
    elif isinstance(exc, Http404):  # DRF answers these as its own, but hands its handler the Django one
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = exception_handler(exc, context)
    if response is None:
        return None
    request = context["request"]
    for name, value in getattr(exc, "extra_headers", {}).items():
        response[name] = value
    if request.path.startswith(V01_PREFIXES):
        message = (
            _first_invalid(response.data)
            if isinstance(exc, exceptions.ValidationError)
            else _detail_of(response.data, exc)
        )
        code = _V01_BY_STATUS.get(response.status_code, V01Code.INTERNAL_ERROR)
        response.data = {"error": {"code": str(code), "message": message}}
        return response
    if isinstance(exc, exceptions.ValidationError):
        response.data = {
            **error_body(request, "Invalid input.", ErrorCode.VALIDATION_ERROR),
            "errors": response.data,
        }
    else:
        response.data = error_body(request, _detail_of(response.data, exc), _code_of(exc))
    return response


async def asgi_error(
    send, *, path: str, status: int, detail: str, code: ErrorCode | str, headers: dict | None = None
) -> None:
    """An error answered at the ASGI level, before Django (the request guard, the gateway), in the same
    formats: `/v0.1` in its own, everything else `{detail, error_code, request_id}`."""
    import json
    import uuid

    if path.startswith(V01_PREFIXES):
        v01 = _V01_BY_STATUS.get(status, V01Code.INTERNAL_ERROR)
        body = json.dumps({"error": {"code": str(v01), "message": detail}}).encode()
    else:
        body = json.dumps(
            {"detail": detail, "error_code": str(code), "request_id": uuid.uuid4().hex}
        ).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *(
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in (headers or {}).items()
        ),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})
