"""The project's middleware, in the order of MIDDLEWARE: the service's URLs, request ids, outages, the
input rule and the security headers. Each is sync and async capable, so none forces a thread hop under
ASGI."""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.http.multipartparser import MultiPartParserError
from django.utils.http import url_has_allowed_host_and_scheme

from accounts.view_as import READ_ONLY_MESSAGE, STOP_PATH, viewing_as
from core.errors import (
    METRICS_URLCONF,
    SERVICE_ENVIRON_KEY,
    ErrorCode,
    invalid_input_response,
    refusal_response,
)
from core.outages import outage_of, outage_response
from core.request_ids import HEADER, request_id_for
from core.untrusted import InputRejected, check_text


class HybridMiddleware:
    """`before` may answer in place of the view (returning a response); `after` sees every response the
    view (or an inner middleware) gave."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self._acall(request)
        early = self.before(request)
        return early if early is not None else self.after(request, self.get_response(request))

    async def _acall(self, request):
        early = self.before(request)
        return early if early is not None else self.after(request, await self.get_response(request))

    def before(self, request):
        return None

    def after(self, request, response):
        return response


SERVICE_URLCONFS = {"metrics": METRICS_URLCONF}


class ServiceUrlconfMiddleware(HybridMiddleware):
    """Routes a request with the URLs of the service whose entry received it (the metrics service has its
    own entry, `registry_site/metrics_asgi.py`, and port, and names itself in the environ); the
    registry's by default."""

    def before(self, request):
        service = request.META.get(SERVICE_ENVIRON_KEY)
        if service:
            request.urlconf = SERVICE_URLCONFS[service]


class RequestIdMiddleware(HybridMiddleware):
    """Gives each request an id that error bodies and logs carry, so a report can be traced: a
    well-formed X-Request-ID is kept, anything else replaced; echoed on every response."""

    def before(self, request):
        request.request_id = request_id_for(request.headers.get(HEADER, ""))

    def after(self, request, response):
        response[HEADER] = request.request_id
        return response


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class OutageMiddleware(HybridMiddleware):
    """A view that failed because PostgreSQL or Redis stopped answering: 503 with a Retry-After in the
    path's format, never 500 (core/outages.py)."""

    def process_exception(self, request, exception):
        outage = outage_of(exception)
        return outage_response(request, outage) if outage is not None else None


class UntrustedInputMiddleware(HybridMiddleware):
    """The shared input rule (`core.untrusted`) on what every view of both services reads from
    the request line and forms: the path, query parameters, form fields and cookies. JSON bodies get the
    same rule in their parser."""

    def before(self, request):
        try:
            check_text(request.path, "path")
            for source, values in (("query", request.GET), ("cookie", request.COOKIES)):
                _check_pairs(source, values)
            if request.method == "POST" and request.content_type in FORM_TYPES:
                request.body  # noqa: B018 (read and kept first, so DRF can parse the same body again later)
                _check_pairs("form", request.POST)
        except InputRejected as rejected:
            return invalid_input_response(request, rejected.field, rejected.message)
        except MultiPartParserError as exc:  # a multipart body without a usable boundary or framing
            return invalid_input_response(request, "form", f"Malformed multipart body: {exc}")
        return None


def _check_pairs(source: str, values) -> None:
    items = values.lists() if hasattr(values, "lists") else ((k, [v]) for k, v in values.items())
    for name, listed in items:
        check_text(name, f"{source} parameter name")
        for value in listed:
            check_text(value, name)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
LEFT_OPEN_WHILE_VIEWING = frozenset({STOP_PATH, "/logout", "/api/auth/logout"})


class ViewAsReadOnlyMiddleware(HybridMiddleware):
    """While an administrator views the console as another user (accounts/view_as.py), every request
    that could change something is refused, on every surface Django serves (pages, APIs, the admin),
    but stopping and logging out. Only such requests with a session cookie read the session (in a
    thread, under ASGI): reads pass untouched."""

    def __call__(self, request):
        if not self._may_change(request):
            return self.get_response(request)  # (a coroutine under ASGI, awaited by the caller)
        return super().__call__(request)

    async def _acall(self, request):
        early = await sync_to_async(self.before)(request)
        return early if early is not None else await self.get_response(request)

    def _may_change(self, request) -> bool:
        return (
            request.method not in SAFE_METHODS
            and settings.SESSION_COOKIE_NAME in request.COOKIES
            and request.path not in LEFT_OPEN_WHILE_VIEWING
        )

    def before(self, request):
        if not viewing_as(request.session):
            return None
        if _posted_by_a_page(request):  # a form of a page: back to that page, the banner and a message
            messages.warning(request, READ_ONLY_MESSAGE)
            back = request.headers.get("Referer", "")
            if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
                back = request.path
            return HttpResponseRedirect(back)
        return refusal_response(request, 403, ErrorCode.VIEWING_AS, READ_ONLY_MESSAGE)


def _posted_by_a_page(request) -> bool:
    """A browser's form submission (its body a form's, the answer it wants a page), not an API call."""
    return request.content_type in FORM_TYPES and "text/html" in request.headers.get("Accept", "")


class SecurityHeadersMiddleware(HybridMiddleware):
    """A Content-Security-Policy (CONTENT_SECURITY_POLICY) and the usual hardening headers on every
    response of both services; Django's SecurityMiddleware adds nosniff, Referrer-Policy and COOP, the
    clickjacking middleware X-Frame-Options. Pages load scripts and styles from this origin only."""

    def __init__(self, get_response):
        super().__init__(get_response)
        self.headers = {
            "Content-Security-Policy": settings.CONTENT_SECURITY_POLICY,
            "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
            "Cross-Origin-Resource-Policy": "same-origin",
        }

    def after(self, request, response):
        if "Access-Control-Allow-Origin" in response.headers:  # meant to be read by other origins (CORS)
            response.headers.setdefault("Cross-Origin-Resource-Policy", "cross-origin")
        for name, value in self.headers.items():
            response.headers.setdefault(name, value)
        return response
