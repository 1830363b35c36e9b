"""Login pages: the form login (prefixed and unprefixed forms), logout, and identity-provider login."""

from urllib.parse import urlencode

from allauth.socialaccount.adapter import get_adapter as get_social_adapter
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import login, logout
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts.authentication import SESSION_AUTH_KEY
from accounts.choices import AuthMethod
from accounts.selectors import login_providers
from accounts.services import LoginRefused, login_attempt
from registry_site.errors import ErrorCode, error_response

HOME = "/"
LOGIN_PAGE = "/login"


def _login_page(request, *, error: str = "", status: int = 200, action: str):
    context = {"error": error, "providers": login_providers(request), "action": action}
    return render(request, "accounts/login.html", context, status=status)


def _login(request, *, unprefixed: bool):
    action = request.path
    if request.method == "GET":
        return _login_page(request, error=request.GET.get("error", "")[:200], action=action)
    try:
        user = login_attempt(
            request=request,
            username=request.POST.get("username", ""),
            password=request.POST.get("password", ""),
        )
    except LoginRefused as refused:
        if unprefixed:
            return HttpResponseRedirect(f"{LOGIN_PAGE}?{urlencode({'error': refused.message})}")
        response = _login_page(
            request, error=refused.message, status=429 if refused.rate_limited else 401, action=action
        )
        if refused.rate_limited:
            response["Retry-After"] = str(refused.retry_after)
        return response
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_AUTH_KEY] = {"method": AuthMethod.SESSION, "provider": None}
    return HttpResponseRedirect(HOME)


@require_http_methods(["GET", "POST"])
def login_view(request):
    """GET/POST /api/auth/login: a failed login answers 401 with the form."""
    return _login(request, unprefixed=False)


@require_http_methods(["GET", "POST"])
def login_unprefixed_view(request):
    """GET/POST /login: a failed login redirects to /login?error=<message>."""
    return _login(request, unprefixed=True)


@require_http_methods(["GET", "POST"])
def logout_view(request):
    logout(request)
    return HttpResponseRedirect(LOGIN_PAGE)


@require_http_methods(["POST"])
def logout_unprefixed_view(request):
    logout(request)
    return HttpResponseRedirect(LOGIN_PAGE)


@require_http_methods(["GET"])
def provider_login_view(request, provider: str):
    """GET /api/auth/auth/{provider}: straight to the identity provider's authorization page."""
    configured = {p["name"] for p in login_providers(request)}
    if provider not in configured:
        return error_response(request, f"No identity provider named '{provider}'.", ErrorCode.NOT_FOUND, 404)
    return get_social_adapter().get_provider(request, provider).redirect_from_request(request)


@require_http_methods(["GET"])
def provider_callback_view(request):
    """GET /api/auth/auth/callback: where identity-provider logins land; home, or login with the error."""
    error = request.GET.get("error", "")
    if error or not request.user.is_authenticated:
        message = error[:200] or "Login with the identity provider failed."
        details = request.GET.get("details", "")[:200]
        if details:
            message = f"{message} ({details})"
        return HttpResponseRedirect(f"{LOGIN_PAGE}?{urlencode({'error': message})}")
    account = SocialAccount.objects.filter(user=request.user).order_by("-last_login").first()
    if account is not None:
        request.session[SESSION_AUTH_KEY] = {"method": AuthMethod.OAUTH, "provider": account.provider}
    return HttpResponseRedirect(HOME)
