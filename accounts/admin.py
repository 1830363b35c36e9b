"""Operator console for users, service accounts, scopes, tokens and the (read-only) audit trail."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts import services
from accounts.admin_forms import ScopeForm
from accounts.models import AuditEvent, ClientCredential, IdpGroupMapping, IssuedToken, Scope, User
from core.admin import ReadOnlyModelAdmin, ServiceModelAdmin


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "email", "is_service_account", "is_staff", "is_superuser", "is_active")
    list_filter = ("is_service_account", "is_staff", "is_superuser", "is_active", "groups")
    fieldsets = (*BaseUserAdmin.fieldsets, ("Machine identity", {"fields": ("is_service_account",)}))
    actions = ["create_client_credential"]

    @admin.action(description="Create a client credential (service accounts)", permissions=["change"])
    def create_client_credential(self, request, queryset):
        for user in queryset:
            if not user.is_service_account:
                self.message_user(request, f"{user}: not a service account", messages.WARNING)
                continue
            new = services.client_credential_create(actor=request.user, user=user)
            self.message_user(
                request,
                f"{user}: client_id={new.credential.client_id} client_secret={new.client_secret} "
                "(shown only now; store it safely)",
                messages.SUCCESS,
            )


@admin.register(ClientCredential)
class ClientCredentialAdmin(admin.ModelAdmin):
    """Credentials are created from the user list (the secret is shown once) and revoked here."""

    list_display = ("client_id", "user", "description", "is_active", "created_at", "last_used_at")
    list_filter = ("is_active",)
    search_fields = ("client_id", "user__username", "description")
    list_select_related = ("user",)
    readonly_fields = ("client_id", "user", "description", "is_active", "created_at", "last_used_at")
    exclude = ("secret_hash",)
    actions = ["revoke_selected"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke selected credentials", permissions=["change"])
    def revoke_selected(self, request, queryset):
        for credential in queryset:
            services.client_credential_revoke(actor=request.user, credential=credential)
        self.message_user(request, "Credentials revoked.", messages.SUCCESS)


@admin.register(IssuedToken)
class IssuedTokenAdmin(admin.ModelAdmin):
    list_display = ("jti", "user", "kind", "description", "created_at", "expires_at", "revoked_at")
    list_filter = ("kind", "revoked_at", "expires_at")
    search_fields = ("jti", "user__username", "description")
    list_select_related = ("user",)
    date_hierarchy = "created_at"
    readonly_fields = (
        "jti",
        "user",
        "kind",
        "description",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
    )
    actions = ["revoke_selected"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_selected(self, request, queryset):
        for token in queryset:
            services.token_revoke(actor=request.user, token=token)
        self.message_user(request, "Tokens revoked.", messages.SUCCESS)


@admin.register(IdpGroupMapping)
class IdpGroupMappingAdmin(admin.ModelAdmin):
    list_display = ("idp_group", "group")
    search_fields = ("idp_group", "group__name")
    list_select_related = ("group",)
    autocomplete_fields = ("group",)


@admin.register(Scope)
class ScopeAdmin(ServiceModelAdmin):
    """Scopes through a structured form (accounts/admin_forms.py); rules are checked by Scope.clean()."""

    form = ScopeForm
    editable_fields = services.SCOPE_EDITABLE_FIELDS
    readonly_on_change = ("name",)
    list_display = ("name", "description", "group_names", "updated_at")
    search_fields = ("name", "description", "groups__name")
    list_filter = ("groups",)
    filter_horizontal = ("groups",)
    readonly_fields = ("created_at", "updated_at")

    class Media:
        css = {"all": ("css/admin-console.css",)}

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    def get_form(self, request, obj=None, **kwargs):
        """The form, suggesting the paths of the registry's servers (which the console's admin site knows:
        accounts sits below the servers app)."""
        form = super().get_form(request, obj, **kwargs)
        form.server_paths = staticmethod(getattr(self.admin_site, "server_paths", lambda: []))
        return form

    @admin.display(description="groups")
    def group_names(self, obj: Scope) -> str:
        return ", ".join(group.name for group in obj.groups.all())

    def service_create(self, request, obj, fields):
        return services.scope_create(actor=request.user, name=obj.name, **fields)

    def service_update(self, request, instance, fields):
        return services.scope_update(actor=request.user, scope=instance, **fields)

    def service_delete(self, request, instance):
        services.scope_delete(actor=request.user, scope=instance)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyModelAdmin):
    """The audit trail is append-only: no add, change or delete from the console."""

    list_display = ("created_at", "actor_name", "action", "target")
    list_filter = ("action", "created_at")
    search_fields = ("actor_name", "target")
    list_select_related = ("actor",)
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "actor", "actor_name", "action", "target", "detail")
    list_per_page = 100
