"""Session pages: the form login (prefixed and unprefixed forms), logout, identity-provider login, and
`session_page`, the decorator every page behind a login uses."""

from functools import wraps
from urllib.parse import urlencode

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from allauth.socialaccount.models import SocialAccount
from django.contrib import messages
from django.contrib.auth import login, logout
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from accounts.authentication import SESSION_AUTH_KEY, principal_from_session
from accounts.backends import PATH as PASSWORD_BACKEND
from accounts.choices import AuthMethod
from accounts.selectors import login_providers
from accounts.services import LoginRefused, login_attempt
from accounts.services.login import login_message, provider_error_message
from core.errors import ErrorCode, error_response

HOME = "/"
LOGIN_PAGE = "/login"


USERNAME_MAX_LENGTH = 150


def safe_next(request, value: str | None) -> str:
    """Where to go after logging in: a path on this site, else home (never another origin)."""
    if (
        value
        and value.startswith("/")
        and url_has_allowed_host_and_scheme(
            value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return value
    return HOME


def back_to(request, default: str = HOME) -> str:
    """Where a page's form returns once done: the page it came from, as its `next` field or parameter
    names it (with that page's filter and search), when that is a path of this site; else `default`."""
    value = request.POST.get("next") or request.GET.get("next")
    return safe_next(request, value) if value and safe_next(request, value) != HOME else default


AFTER_LOGIN_KEY = "after_login"  # session: where an identity-provider login goes back to


def login_url(next_path: str = "", **params) -> str:
    """The login page, remembering where to go afterwards and what to show."""
    query = {**params, **({"next": next_path} if next_path and next_path != HOME else {})}
    return f"{LOGIN_PAGE}?{urlencode(query)}" if query else LOGIN_PAGE


def _login_page(
    request, *, error: str = "", username: str = "", status: int = 200, action: str, next_path: str
):
    context = {
        "error": error,
        "username": username[:USERNAME_MAX_LENGTH],
        "providers": login_providers(request),
        "action": action,
        "next": next_path if next_path != HOME else "",
    }
    return render(request, "accounts/login.html", context, status=status)


def _login(request, *, unprefixed: bool):
    action = request.path
    source = request.GET if request.method == "GET" else request.POST
    next_path = safe_next(request, source.get("next"))
    if request.method == "GET":
        return _login_page(
            request,
            error=login_message(request.GET.get("error", "")),
            username=request.GET.get("username", ""),
            action=action,
            next_path=next_path,
        )
    username = request.POST.get("username", "")
    try:
        user = login_attempt(request=request, username=username, password=request.POST.get("password", ""))
    except LoginRefused as refused:
        if unprefixed:
            return HttpResponseRedirect(
                login_url(next_path, error=refused.message, username=username[:USERNAME_MAX_LENGTH])
            )
        response = _login_page(
            request,
            error=refused.message,
            username=username,
            status=429 if refused.rate_limited else 401,
            action=action,
            next_path=next_path,
        )
        if refused.rate_limited:
            response["Retry-After"] = str(refused.retry_after)
        return response
    login(request, user, backend=PASSWORD_BACKEND)
    request.session[SESSION_AUTH_KEY] = {"method": AuthMethod.SESSION, "provider": None}
    return HttpResponseRedirect(next_path)


@require_http_methods(["GET", "POST"])
def login_view(request):
    """GET/POST /api/auth/login: a failed login answers 401 with the form."""
    return _login(request, unprefixed=False)


@require_http_methods(["GET", "POST"])
def login_unprefixed_view(request):
    """GET/POST /login: a failed login redirects to /login?error=<message>."""
    return _login(request, unprefixed=True)


LOGGED_OUT = "You have logged out."


def _logged_out(request) -> HttpResponseRedirect:
    was_logged_in = request.user.is_authenticated
    logout(request)  # a new session: the message below lives in it
    if was_logged_in:
        messages.success(request, LOGGED_OUT)
    return HttpResponseRedirect(LOGIN_PAGE)


@require_http_methods(["GET", "POST"])
def logout_view(request):
    """GET/POST /api/auth/logout: the session ends, then the login page (the contract's GET included)."""
    return _logged_out(request)


@require_http_methods(["GET", "POST"])
def logout_unprefixed_view(request):
    """POST /logout ends the session. GET /logout (a typed or bookmarked address) asks first, with a
    button that posts: a link or image on another site cannot log anyone out."""
    if request.method == "GET":
        if not request.user.is_authenticated:
            return HttpResponseRedirect(LOGIN_PAGE)
        return render(request, "accounts/logout.html")
    return _logged_out(request)


@require_http_methods(["GET"])
def provider_login_view(request, provider: str):
    """GET /api/auth/auth/{provider}[?next=<path on this site>]: straight to the identity provider."""
    configured = {p["name"] for p in login_providers(request)}
    if provider not in configured:
        return error_response(request, f"No identity provider named '{provider}'.", ErrorCode.NOT_FOUND, 404)
    # The destination waits in the session for the callback below (which records how the user logged
    # in); allauth is not given it, or it would go there directly and skip the callback.
    request.session[AFTER_LOGIN_KEY] = safe_next(request, request.GET.get("next"))
    request.GET = request.GET.copy()
    request.GET.pop("next", None)
    return get_social_adapter().get_provider(request, provider).redirect_from_request(request)


@require_http_methods(["GET"])
def provider_callback_view(request):
    """GET /api/auth/auth/callback: where identity-provider logins land; the page asked for before the
    login (home by default), or the login page with the error."""
    error = request.GET.get("error", "")
    if error or not request.user.is_authenticated:
        # The provider's own words (`error_description`, `details`) come with the link: never shown.
        return HttpResponseRedirect(f"{LOGIN_PAGE}?{urlencode({'error': provider_error_message(error)})}")
    account = SocialAccount.objects.filter(user=request.user).order_by("-last_login").first()
    if account is not None:
        request.session[SESSION_AUTH_KEY] = {"method": AuthMethod.OAUTH, "provider": account.provider}
    return HttpResponseRedirect(request.session.pop(AFTER_LOGIN_KEY, HOME))


def session_page(view):
    """Pages need a logged-in session; anyone else is sent to the login page. The view gets the principal."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        principal = principal_from_session(request, user=request.user)
        if principal is None:  # a page comes back after the login; a form post is not repeated
            return HttpResponseRedirect(login_url(request.get_full_path() if request.method == "GET" else ""))
        return view(request, principal, *args, **kwargs)

    return wrapper
