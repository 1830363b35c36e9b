"""The operator console's admin site: the Django admin arranged for operators.

- One "Accounts" section: the registry's accounts app and Django's groups together; one "Oauth" section:
  users' consents and django-oauth-toolkit's applications, tokens and codes.
- Models nobody uses here are not registered: allauth's e-mail addresses (logins are by username), its
  provider apps and tokens (providers come from the environment; tokens are not stored), and the linked
  provider accounts unless an identity provider is configured.
- A metrics page with plots per server and per tool (metrics/admin_views.py), listed under Metrics.
- Every model follows the registry's rules for the caller (core.admin.ConsoleModelAdmin), those of
  other packages included.
"""

from functools import update_wrapper

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.template.response import TemplateResponse
from django.urls import path, reverse

# Apps whose models the console shows in another app's section.
MERGED_SECTIONS = {"auth": "accounts", "oauth2_provider": "oauth"}


class ConsoleAdminSite(admin.AdminSite):
    site_header = "MCP Gateway Registry"
    site_title = "MCP Gateway Registry"
    index_title = "Operator console"

    def get_urls(self):
        from metrics.admin_views import metrics_plots
        from registry_site.access_admin import effective_access, view_as

        return [
            path("metrics/plots/", self.admin_view(metrics_plots), name="metrics-plots"),
            path("access/", self.admin_view(effective_access), name="effective-access"),
            path("access/view-as", self.admin_view(view_as), name="view-as"),
            *super().get_urls(),
        ]

    def admin_view(self, view, cacheable=False):
        """Every console page; while an administrator views the console as someone who may not open it,
        the refusal that person gets, under the banner (accounts/view_as.py), not the viewer's console."""
        guarded = super().admin_view(view, cacheable)

        def inner(request, *args, **kwargs):
            if (viewed := self._viewed_without_console(request)) is not None:
                context = {**self.each_context(request), "viewed": viewed, "title": "Operator console"}
                return TemplateResponse(request, "admin/view_as_refused.html", context, status=403)
            return guarded(request, *args, **kwargs)

        return update_wrapper(inner, view)

    def _viewed_without_console(self, request):
        """The user an administrator views the console as, when that user may not open it; else None."""
        from accounts.view_as import may_open_console, viewed_user, viewing_as

        if not viewing_as(request.session) or not super().has_permission(request):
            return None
        viewed = viewed_user(request.session)
        if viewed is None or not self.principal_of(request).viewed_by or may_open_console(viewed):
            return None
        return viewed

    def principal_of(self, request):
        """The caller as the registry's rules see it (core.admin.ConsoleModelAdmin asks), once a request."""
        from accounts.authentication import principal_from_session
        from accounts.principal import ANONYMOUS

        if not hasattr(request, "console_principal"):
            request.console_principal = principal_from_session(request, user=request.user) or ANONYMOUS
        return request.console_principal

    def server_paths(self) -> list[str]:
        """Every server's path, for the forms of apps below the servers app (a scope's rules)."""
        from servers.models import Server

        return list(Server.objects.order_by("path").values_list("path", flat=True))

    def server_tools(self) -> dict[str, list[str]]:
        """Every server's known tools by path, for a scope's rules to offer as choices."""
        from servers.models import Tool

        tools: dict[str, list[str]] = {}
        rows = Tool.objects.order_by("server__path", "name").values_list("server__path", "name")
        for server_path, name in rows:
            tools.setdefault(server_path, []).append(name)
        return tools

    def get_app_list(self, request, app_label=None):
        apps = {app["app_label"]: app for app in self._build_app_dict(request).values()}
        for source, target in MERGED_SECTIONS.items():
            if source in apps and target in apps:
                apps[target]["models"] = sorted(
                    apps[target]["models"] + apps.pop(source)["models"], key=lambda model: model["name"]
                )
        if "metrics" in apps and self.principal_of(request).is_admin:
            apps["metrics"]["models"].insert(0, _plots_entry())
        if "accounts" in apps and self.principal_of(request).is_admin:
            apps["accounts"]["models"].insert(
                0, _page_entry("Effective access", "EffectiveAccess", "admin:effective-access")
            )
        if app_label is not None:
            return [apps[app_label]] if app_label in apps else []
        return sorted(apps.values(), key=lambda app: app["name"].lower())


def _plots_entry() -> dict:
    return _page_entry("Plots: requests, errors and latency", "MetricPlots", "admin:metrics-plots")


def _page_entry(name: str, object_name: str, url_name: str) -> dict:
    """A page of the console listed in a section of the index, as a model would be."""
    url = reverse(url_name)
    return {
        "name": name,
        "object_name": object_name,
        "admin_url": url,
        "add_url": None,
        "view_only": True,
        "perms": {"view": True},
    }


def unused_models_unregister(site: admin.AdminSite) -> None:
    from allauth.account.models import EmailAddress
    from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
    from oauth2_provider.models import IDToken

    unused = [EmailAddress, SocialApp, SocialToken, IDToken]  # ID tokens: OpenID Connect is not served
    if not settings.SOCIALACCOUNT_PROVIDERS:
        unused.append(SocialAccount)
    for model in unused:
        if site.is_registered(model):
            site.unregister(model)


def console_rules_apply(site: admin.AdminSite) -> None:
    """Give the ModelAdmins that other packages register (django-oauth-toolkit's tokens and grants) the
    console's rule: without a rule of their own, they are for registry administrators."""
    from core.admin import ConsoleModelAdmin

    for model, model_admin in list(site._registry.items()):
        if not isinstance(model_admin, ConsoleModelAdmin):
            ruled = type(type(model_admin).__name__, (ConsoleModelAdmin, type(model_admin)), {})
            site.unregister(model)
            site.register(model, ruled)


class ConsoleAdminConfig(AdminConfig):
    default_site = "registry_site.admin_site.ConsoleAdminSite"

    def ready(self):
        super().ready()  # autodiscovers every app's admin module
        unused_models_unregister(admin.site)
        console_rules_apply(admin.site)
