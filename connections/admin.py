"""Upstream credentials in the operator console (administrators only): who is connected to which server
and since when, never a secret; the discovery connection of a server that needs each user's credential
(made here); and revoking, audited, through the same service as a user's disconnect."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from connections.choices import Purpose
from connections.models import UpstreamCredential
from connections.services import credential_disconnect, credential_secret_connect, secret_problem
from core.admin import ConsoleModelAdmin
from servers.choices import USER_CREDENTIAL_MODES
from servers.models import Server


class DiscoveryConnectionForm(forms.ModelForm):
    """The discovery connection of one server: its health checks and tool discovery use it, never a
    user's call."""

    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), max_length=4096, strip=False)

    class Meta:
        model = UpstreamCredential
        fields = ("server",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["server"].queryset = Server.objects.filter(upstream_auth__in=list(USER_CREDENTIAL_MODES))
        self.fields["server"].help_text = "Only servers that need each user's own credential are listed."

    def clean_secret(self):
        if problem := secret_problem(self.cleaned_data["secret"]):
            raise ValidationError(problem)
        return self.cleaned_data["secret"]

    def validate_unique(self):
        return None  # the service replaces the server's discovery connection


@admin.register(UpstreamCredential)
class UpstreamCredentialAdmin(ConsoleModelAdmin):
    list_display = ("server", "user", "purpose", "account_name", "created_at", "updated_at")
    list_filter = ("purpose", "mode")
    search_fields = ("server__path", "user__username", "account_name")
    list_select_related = ("server", "user")
    readonly_fields = (
        "server",
        "user",
        "purpose",
        "mode",
        "origin",
        "account_name",
        "connected_by",
        "created_at",
    )
    exclude = ("sealed",)
    actions = ["revoke"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = DiscoveryConnectionForm
            kwargs["fields"] = ("server", "secret")
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # revoked (the action below), audited

    def save_model(self, request, obj, form, change):
        credential = credential_secret_connect(
            actor=request.user,
            server=form.cleaned_data["server"],
            user=None,
            secret=form.cleaned_data["secret"],
            purpose=Purpose.DISCOVERY,
        )
        obj.pk = credential.pk

    @admin.action(description="Revoke the selected connections (their owners must connect again)")
    def revoke(self, request, queryset):
        count = 0
        for credential in queryset.select_related("server", "user"):
            credential_disconnect(actor=request.user, credential=credential, by_administrator=True)
            count += 1
        self.message_user(request, f"{count} connections revoked.", messages.SUCCESS)
