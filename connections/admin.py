"""Upstream credentials in the operator console (administrators only): who is connected to which server
or agent, since when, with which scopes and until when, never a secret; the discovery connection of a
server or agent that needs each user's secret (made here; one users sign in to gets its own by a
sign-in, linked from here); revoking, audited, through the same service as a user's disconnect; and the
registry's clients at upstream authorization servers, including one an operator registered by hand."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from connections.choices import Purpose
from connections.models import UpstreamClient, UpstreamCredential
from connections.oauth.client import CALLBACK_PATH
from connections.services import (
    credential_disconnect,
    credential_secret_connect,
    secret_problem,
    upstream_client_enter,
    upstream_client_problem,
    upstream_client_remove,
)
from core.admin import ConsoleModelAdmin
from core.public_url import base_url
from core.targets import TARGETS
from servers.choices import USER_CREDENTIAL_MODES, UpstreamAuth


class DiscoveryConnectionForm(forms.ModelForm):
    """The discovery connection of one server or agent: its health checks (and a server's tool discovery)
    use it, never a user's call."""

    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), max_length=4096, strip=False)

    class Meta:
        model = UpstreamCredential
        fields = ("server", "agent")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for kind in ("server", "agent"):
            model = TARGETS.upstreams[kind].model
            self.fields[kind].queryset = model.objects.filter(upstream_auth__in=list(USER_CREDENTIAL_MODES))
            self.fields[kind].help_text = f"Only {kind}s that need each user's own credential are listed."

    def clean_secret(self):
        if problem := secret_problem(self.cleaned_data["secret"]):
            raise ValidationError(problem)
        return self.cleaned_data["secret"]

    def clean(self):
        chosen = [
            t for t in (self.cleaned_data.get("server"), self.cleaned_data.get("agent")) if t is not None
        ]
        if len(chosen) != 1:
            raise ValidationError("Choose one server or one agent.")
        server = self.cleaned_data["target"] = chosen[0]
        if server.upstream_auth == UpstreamAuth.USER_OAUTH:
            raise ValidationError(
                format_html(
                    'Users sign in to {}: make its discovery connection by a sign-in at <a href="{}">{}</a>.',
                    server.path,
                    where := f"/connections{server.path}?purpose=discovery",
                    where,
                )
            )
        return self.cleaned_data

    def validate_unique(self):
        return None  # the service replaces the server's discovery connection


@admin.register(UpstreamCredential)
class UpstreamCredentialAdmin(ConsoleModelAdmin):
    list_display = ("target", "user", "purpose", "scopes", "expires_at", "created_at", "updated_at")
    list_filter = ("purpose", "mode")
    search_fields = ("server__path", "agent__path", "user__username", "account_name")
    list_select_related = ("server", "agent", "user")
    readonly_fields = (
        "server",
        "agent",
        "user",
        "purpose",
        "mode",
        "origin",
        "account_name",
        "scopes",
        "wanted_scopes",
        "expires_at",
        "connected_by",
        "created_at",
    )
    exclude = ("sealed",)
    actions = ["revoke"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = DiscoveryConnectionForm
            kwargs["fields"] = ("server", "agent", "secret")
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # revoked (the action below), audited

    def service_save(self, request, obj, form, change):
        return credential_secret_connect(
            actor=request.user,
            target=form.cleaned_data["target"],
            user=None,
            secret=form.cleaned_data["secret"],
            purpose=Purpose.DISCOVERY,
        )

    @admin.action(description="Revoke the selected connections (their owners must connect again)")
    def revoke(self, request, queryset):
        count = 0
        for credential in queryset.select_related("server", "agent", "user"):
            credential_disconnect(actor=request.user, credential=credential, by_administrator=True)
            count += 1
        self.message_user(request, f"{count} connections revoked.", messages.SUCCESS)


class UpstreamClientForm(forms.ModelForm):
    """The registry's client at an authorization server that offers neither client metadata documents nor
    dynamic registration, registered there by hand by an operator."""

    client_secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        max_length=4096,
        strip=False,
        help_text="When the server gave one; sealed, never shown again.",
    )

    class Meta:
        model = UpstreamClient
        fields = ("issuer", "client_id", "redirect_uri")

    def clean(self):
        data = self.cleaned_data
        problem = upstream_client_problem(
            issuer=data.get("issuer", ""),
            client_id=data.get("client_id", ""),
            secret=data.get("client_secret", ""),
        )
        if problem:
            raise ValidationError(problem)
        return data

    def validate_unique(self):
        return None  # the service replaces the client the registry had there


@admin.register(UpstreamClient)
class UpstreamClientAdmin(ConsoleModelAdmin):
    list_display = ("issuer", "client_id", "entered", "redirect_uri", "registered_at")
    list_filter = ("entered",)
    search_fields = ("issuer", "client_id")
    exclude = ("sealed_secret",)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = UpstreamClientForm
            kwargs["fields"] = ("issuer", "client_id", "client_secret", "redirect_uri")
        form = super().get_form(request, obj, **kwargs)
        if obj is None:
            form.base_fields["redirect_uri"].initial = f"{base_url(request)}{CALLBACK_PATH}"
            form.base_fields["redirect_uri"].help_text = "The redirect URI you registered (our callback)."
        return form

    def get_readonly_fields(self, request, obj=None):
        return ("issuer", "client_id", "redirect_uri", "entered", "registered_at") if obj is not None else ()

    def has_change_permission(self, request, obj=None):
        return False

    def service_save(self, request, obj, form, change):
        data = form.cleaned_data
        return upstream_client_enter(
            actor=request.user,
            issuer=data["issuer"],
            client_id=data["client_id"],
            client_secret=data.get("client_secret") or "",
            redirect_uri=data["redirect_uri"],
        )

    def service_delete(self, request, instance):
        upstream_client_remove(actor=request.user, client=instance)
