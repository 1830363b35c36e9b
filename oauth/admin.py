"""The authorization server in the operator console: django-oauth-toolkit's applications (registered by
an administrator, dynamically or by a metadata document), tokens and codes, and users' consents, whose
withdrawal goes through the same service as the token page's, and the identity providers whose
assertions it accepts."""

from django.contrib import admin, messages
from django.db import models
from oauth2_provider.admin import ApplicationAdmin
from oauth2_provider.models import Application

from core.admin import ConsoleModelAdmin
from oauth.models import Consent, TrustedIssuer
from oauth.services import (
    application_delete,
    application_save,
    consent_withdraw,
    trusted_issuer_delete,
    trusted_issuer_save,
)


@admin.register(Consent)
class ConsentAdmin(ConsoleModelAdmin):
    list_display = ("user", "application", "all_rights", "remembered", "issuer", "updated_at", "last_used_at")
    list_filter = ("all_rights", "remembered", "issuer", "application__registration_source")
    search_fields = ("user__username", "application__name", "application__client_id")
    list_select_related = ("user", "application")
    readonly_fields = (
        "user",
        "application",
        "all_rights",
        "scopes",
        "resources",
        "remembered",
        "issuer",
        "tool_sets",
        "created_at",
        "last_used_at",
    )
    actions = ["withdraw"]

    def has_add_permission(self, request):
        return False  # consents are given by users on the consent page, or by identity providers' assertions

    def has_delete_permission(self, request, obj=None):
        return False  # withdrawn (the action below), which ends the tokens too and is audited

    @admin.action(description="Withdraw the selected consents (their applications' tokens end)")
    def withdraw(self, request, queryset):
        revoked = sum(consent_withdraw(actor=request.user, consent=consent) for consent in queryset)
        self.message_user(
            request, f"{queryset.count()} consents withdrawn, {revoked} tokens revoked.", messages.SUCCESS
        )


admin.site.unregister(Application)


@admin.register(Application)
class RegisteredApplicationAdmin(ConsoleModelAdmin, ApplicationAdmin):
    """Applications with how each identified itself: registered here, dynamically, or by a metadata
    document (whose URL is its client id)."""

    list_display = ("name", "client_id", "registration_source", "client_type", "created")
    list_filter = ("registration_source", "client_type", "authorization_grant_type")
    search_fields = ("name", "client_id")
    list_select_related = ("user",)

    def service_save(self, request, obj, form, change):
        return application_save(
            actor=request.user, application=obj, created=not change, fields=form.changed_data
        )

    def service_delete(self, request, instance):
        application_delete(actor=request.user, application=instance)


@admin.register(TrustedIssuer)
class TrustedIssuerAdmin(ConsoleModelAdmin):
    """Company identity providers whose identity assertions (ID-JAG) the authorization server accepts
    (oauth/id_jag.py): administrators only, every change audited."""

    list_display = ("issuer", "user_claim", "is_enabled", "created_at")
    list_filter = ("is_enabled",)
    search_fields = ("issuer",)
    fields = ("issuer", "jwks_url", "jwks", "algorithms", "user_claim", "is_enabled")
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def service_save(self, request, obj, form, change):
        return trusted_issuer_save(
            actor=request.user, issuer=obj, created=not change, fields=form.changed_data
        )

    def service_delete(self, request, instance):
        trusted_issuer_delete(actor=request.user, issuer=instance)
