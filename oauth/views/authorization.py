"""The authorization server's pages and endpoints, on top of django-oauth-toolkit's: the consent page
(which servers and tools, narrowable, remembered or not), dynamic registration within its limits, the
protected resource metadata of every gateway URL, and withdrawing an application's access."""

from __future__ import annotations

from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.views import (
    AuthorizationView,
    OAuthProtectedResourceMetadataView,
    OAuthServerMetadataView,
)
from oauth2_provider.views.dynamic_client_registration import (
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
)
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from accounts.authentication import principal_from_session
from accounts.views.login import session_page
from core import ratelimit
from core.confirm import confirmation_page, confirmed
from core.content_policy import policy_sending_forms_to
from core.public_url import base_url
from core.untrusted import InputRejected, json_loads
from oauth import resources, selectors, services
from oauth.clients import ClientMetadataRefused, client_metadata_check
from oauth.grants import ID_JAG_PROFILE
from oauth.models import Consent
from oauth.resources import our_origins
from oauth.validators import code_challenge_problem
from servers.policies import callable_tools

# The authorization request's parameters the consent form carries through to the code's creation.
REQUEST_KEYS = (
    "client_id",
    "redirect_uri",
    "response_type",
    "state",
    "code_challenge",
    "code_challenge_method",
)
ALL_RIGHTS = "__all__"
ADMINISTRATION = "__admin__"  # administration too: only an administrator, only when ticked


class ConsentForm(AllowForm):
    rights = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    tools = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    remember = forms.BooleanField(required=False)

    def __init__(self, *args, rights: list[tuple[str, str]] = (), tools: list[str] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["rights"].choices = rights
        self.fields["tools"].choices = [(name, name) for name in tools]


class ConsentView(AuthorizationView):
    """GET/POST /oauth/authorize: the authorization endpoint with the registry's consent page.

    The request must name one resource of this registry (RFC 8707); the page shows the application
    (name, redirect host, how it identified itself), what its tokens reach at that resource (the
    user's scopes there, narrowable) and for how long. A remembered consent covering the resource is
    not asked again."""

    template_name = "oauth/authorize.html"
    form_class = ConsentForm

    def principal(self):
        return principal_from_session(self.request)

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        principal = self.principal()
        names = list(principal.scopes) if principal is not None else []
        kwargs["rights"] = [(ALL_RIGHTS, "all my rights"), (ADMINISTRATION, "administration")]
        kwargs["rights"] += [(name, name) for name in names]
        path = self._server_path_asked()
        kwargs["tools"] = callable_tools(principal, path) if principal is not None and path else []
        return kwargs

    def _server_path_asked(self) -> str:
        """The server path of the one resource the request names (query or form), if it is a server."""
        raw = (self.request.POST.get("resource") or self.request.GET.get("resource") or "").split()
        if len(raw) != 1:
            return ""
        try:
            return resources.resource_of(raw[0], origins=our_origins(self.request)).server_path or ""
        except resources.ResourceRefused:
            return ""

    def _resource(self, raw: str | None, state, redirect_uri) -> resources.Resource | OAuthToolkitError:
        listed = (raw or "").split()
        try:
            if len(listed) != 1:
                raise resources.ResourceRefused("Name exactly one resource: the server URL the client uses.")
            return resources.resource_of(listed[0], origins=our_origins(self.request))
        except resources.ResourceRefused as refused:
            error = CustomOAuth2Error(error="invalid_target", description=str(refused), state=state)
            return OAuthToolkitError(error=error, redirect_uri=redirect_uri)

    def render_to_response(self, context, **kwargs):
        if "form" not in context:  # an error page of django-oauth-toolkit
            return super().render_to_response(context, **kwargs)
        application = context["application"]
        problem = code_challenge_problem(context.get("code_challenge"))  # (the code's creation asks too)
        if context.get("code_challenge_method") != "S256":  # (a missing challenge never gets this far)
            problem = 'Unsupported code_challenge_method; use "S256".'
        if problem is not None:
            error = CustomOAuth2Error(
                error="invalid_request", description=problem, state=context.get("state")
            )
            return self.error_response(
                OAuthToolkitError(error=error, redirect_uri=context["redirect_uri"]), application
            )
        resource = self._resource(context.get("resource"), context.get("state"), context["redirect_uri"])
        if isinstance(resource, OAuthToolkitError):
            return self.error_response(resource, application)
        principal = self.principal()
        consent = selectors.consent_of(self.request.user, application)
        scopes = selectors.scopes_for_consent(principal, resource.audience)
        has_rights = principal.is_admin or bool(scopes)
        if consent is not None and consent.remembered and resource.url in consent.resources and has_rights:
            return self._approve_remembered(context, application, resource)
        context.update(
            self._page(principal, application, resource, context["redirect_uri"], consent, scopes, has_rights)
        )
        if asked := context.get("asked_again"):  # the choices as the user left them
            context |= {
                "chosen": set(asked["rights"]),
                "ticked_tools": set(asked["tools"]),
                "problem": asked["problem"],
            }
        response = super().render_to_response(context, **kwargs)
        response["Content-Security-Policy"] = policy_sending_forms_to(context["redirect_uri"])
        return response

    def _approve_remembered(self, context, application, resource):
        """Approve again what the user approved before and asked to be remembered, without asking.

        The answer is a page, not a redirect: after the login form, a redirect chain ending at the
        application would be blocked by the login page's form-action policy."""
        credentials = {key: context[key] for key in REQUEST_KEYS if context.get(key)}
        credentials["resource"] = [resource.url]
        try:
            uri, _, _, _ = self.create_authorization_response(
                request=self.request, scopes=" ".join(context["scopes"]), credentials=credentials, allow=True
            )
        except OAuthToolkitError as error:
            return self.error_response(error, application)
        page = render(self.request, "oauth/return.html", {"application": application, "uri": uri})
        page["Content-Security-Policy"] = policy_sending_forms_to(context["redirect_uri"])
        return page

    def _page(self, principal, application, resource, redirect_uri, consent, scopes, has_rights) -> dict:
        return {
            "resource_url": resource.url,
            "server_path": resource.server_path,
            "client_kind": application.registration_source,
            "client_host": urlsplit(application.client_id).hostname
            if application.registration_source == application.RegistrationSource.CIMD
            else "",
            "redirect_host": urlsplit(redirect_uri).netloc or urlsplit(redirect_uri).scheme,
            "scope_rights": scopes,
            "is_admin": principal.is_admin,
            "has_rights": has_rights,
            "chosen": set(consent.scopes) if consent is not None and not consent.all_rights else None,
            "tools": callable_tools(principal, resource.server_path) if resource.server_path else [],
            "ticked_tools": set(consent.tools.get(resource.server_path, []))
            if consent is not None and resource.server_path in consent.tools
            else None,
            "access_minutes": settings.OAUTH_ACCESS_TOKEN_SECONDS // 60,
            "refresh_days": settings.OAUTH_REFRESH_TOKEN_DAYS,
        }

    def _ask_again(self, form, application, data, rights_chosen: bool):
        """Allow pressed with nothing to allow: the page again, the choices as they were, and why."""
        problem = (
            "Tick at least one tool it may call, or choose Deny."
            if rights_chosen
            else "Tick at least one of your rights to allow, or choose Deny."
        )
        context = {key: data.get(key) for key in REQUEST_KEYS}
        context |= {
            "form": form,
            "application": application,
            "resource": data.get("resource"),
            "scopes": (data.get("scope") or "").split(),
            "asked_again": {
                "problem": problem,
                "rights": data.get("rights") or [],
                "tools": data.get("tools") or [],
            },
        }
        return self.render_to_response(context, status=400)

    def form_invalid(self, form):
        """A consent form that was altered (a right that is not the user's, a missing field)."""
        error = {
            "error": "invalid_request",
            "description": "The form was altered; start again from the application.",
        }
        return super().render_to_response({"error": error}, status=400)

    def form_valid(self, form):
        data = form.cleaned_data
        application = selectors.application_of(data["client_id"])
        if application is None:
            raise Http404("No such application.")
        resource = self._resource(data.get("resource"), data.get("state"), data["redirect_uri"])
        if isinstance(resource, OAuthToolkitError):
            return self.error_response(resource, application)
        if data.get("allow"):
            principal = self.principal()
            chosen = data.get("rights") or []
            administers = ADMINISTRATION in chosen and principal.is_admin
            all_rights = administers or (ALL_RIGHTS in chosen and principal.is_admin)
            scopes = (
                list(principal.scopes)
                if all_rights
                else [name for name in chosen if name in principal.scopes]
            )
            tools = [] if administers else data.get("tools") or []
            offered = [name for name, _ in form.fields["tools"].choices]
            if (not all_rights and not scopes) or (offered and not tools and not administers):
                return self._ask_again(form, application, data, rights_chosen=all_rights or bool(scopes))
            else:
                services.consent_record(
                    user=self.request.user,
                    application=application,
                    all_rights=all_rights,
                    administers=administers,
                    scopes=scopes,
                    resource=resource.url,
                    server_path=resource.server_path or "",
                    tools=tools,
                    remember=bool(data.get("remember")),
                )
        return super().form_valid(form)


def _metadata_refusal(request) -> JsonResponse | None:
    """The OAuth error answering a registration body that breaks the rule of oauth/clients.py, or None."""
    try:
        metadata = json_loads(request.body)
    except InputRejected as rejected:
        return _oauth_error("invalid_client_metadata", str(rejected), 400)
    if not isinstance(metadata, dict):
        return _oauth_error("invalid_client_metadata", "The body must be a JSON object.", 400)
    try:
        client_metadata_check(metadata)
    except ClientMetadataRefused as refused:
        return _oauth_error(refused.error, refused.description, 400)
    return None


class RegistrationView(DynamicClientRegistrationView):
    """POST /oauth/register: dynamic client registration (RFC 7591), open to anyone within
    OAUTH_REGISTRATIONS_PER_HOUR per address, under the one rule for client metadata (oauth/clients.py).

    Registration is anonymous: cookies are ignored, so a session (a cross-site post carrying an
    administrator's cookie, with no CSRF token) can never lend a registration its owner."""

    def post(self, request, *args, **kwargs):
        request.user = AnonymousUser()
        address = request.META.get("REMOTE_ADDR", "")
        limit = ratelimit.take(
            f"oauth-register:{address}", capacity=settings.OAUTH_REGISTRATIONS_PER_HOUR, period_seconds=3600
        )
        if not limit.allowed:
            response = _oauth_error(
                "temporarily_unavailable", "Too many registrations from this address; try again later.", 429
            )
            for name, value in limit.headers().items():
                response[name] = value
            return response
        return _metadata_refusal(request) or super().post(request, *args, **kwargs)


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """GET/PUT/DELETE /oauth/register/<client_id> (RFC 7592): a client reads, replaces or removes its
    registration with its registration token; a replacement follows the same rule as a registration."""

    def put(self, request, *args, **kwargs):
        return _metadata_refusal(request) or super().put(request, *args, **kwargs)


def _oauth_error(error: str, description: str, status: int) -> JsonResponse:
    """The OAuth error format (RFC 6749 section 5.2) of the authorization server's endpoints."""
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    return response


class ServerMetadataView(OAuthServerMetadataView):
    """GET /.well-known/oauth-authorization-server (RFC 8414): django-oauth-toolkit's document, which also
    says the token endpoint takes identity providers' assertions (the ID-JAG grant profile)."""

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        document = json_loads(response.content)
        document["authorization_grant_profiles_supported"] = [ID_JAG_PROFILE]
        answer = JsonResponse(document)
        answer["Access-Control-Allow-Origin"] = "*"
        return answer


class ResourceMetadataView(OAuthProtectedResourceMetadataView):
    """GET /.well-known/oauth-protected-resource[/<server path>/mcp]: RFC 9728 metadata of the registry's
    APIs and of every gateway URL. Any well-formed gateway path answers, registered or not, so the
    document tells an anonymous caller nothing about which servers exist."""

    def dispatch(self, request, *args, **kwargs):
        suffix = request.path.removeprefix("/.well-known/oauth-protected-resource")
        try:
            self.resource = resources.resource_of(base_url(request) + suffix, origins=our_origins(request))
        except resources.ResourceRefused:
            return _oauth_error("invalid_target", "No protected resource has that URL.", 404)
        return super().dispatch(request, *args, **kwargs)

    def get_resource(self, request):
        return self.resource.url

    def get_authorization_servers(self, request):
        return [base_url(request)]

    def get_scopes_supported(self):
        return [self.resource.oauth_scope]


@require_POST
@session_page
def consent_withdraw_form(request, principal, pk: int):
    """POST /oauth/applications/<id>/revoke: withdraw one's consent; the application's tokens end."""
    consent = Consent.objects.select_related("application", "user").filter(pk=pk, user=principal.user).first()
    if principal.user is None or consent is None:
        context = {"status": 404, "message": "You have authorized no such application."}
        return render(request, "servers/problem.html", context, status=404)
    name = consent.application.name or consent.application.client_id
    if not confirmed(request):
        return confirmation_page(
            request,
            heading=f"Revoke the access of {name}?",
            consequence="Every token it holds stops working at once; it must ask you again to connect.",
            button="Revoke its access",
            back=reverse("oauth2_provider:tokens-page"),
            done="revoked",
        )
    services.consent_withdraw(actor=principal, consent=consent)
    messages.success(request, f"Access of {name} revoked.")
    response = HttpResponseRedirect(reverse("oauth2_provider:tokens-page"))
    response.status_code = 303
    return response
