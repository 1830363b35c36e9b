"""Operator console for users, groups, identity-provider mappings, service accounts, scopes, tokens and
the (read-only) audit trail: registry administrators' work (core.admin.ConsoleModelAdmin's default).
Every write goes through accounts' services, which audit it."""

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin as BaseGroupAdmin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.models import Group

from accounts import services
from accounts.admin_forms import ScopeForm
from accounts.choices import SYSTEM_GROUPS
from accounts.models import AuditEvent, ClientCredential, IdpGroupMapping, IssuedToken, Scope, User
from accounts.services.groups import group_name_problem
from core.admin import ConsoleModelAdmin, ReadOnlyModelAdmin, ServiceModelAdmin, related_values


@admin.register(User)
class UserAdmin(ConsoleModelAdmin, BaseUserAdmin):
    list_display = ("username", "email", "is_service_account", "is_staff", "is_superuser", "is_active")
    list_filter = ("is_service_account", "is_staff", "is_superuser", "is_active", "groups")
    fieldsets = (*BaseUserAdmin.fieldsets, ("Machine identity", {"fields": ("is_service_account",)}))
    actions = ["create_client_credential"]

    def service_save(self, request, obj, form, change):
        return services.user_save(actor=request.user, user=obj, created=not change, fields=form.changed_data)

    def save_related(self, request, form, formsets, change):
        relations = related_values(form, ("groups", "user_permissions"))
        super().save_related(request, form, formsets, change)
        services.user_memberships_set(
            actor=request.user,
            user=form.instance,
            groups=relations.get("groups"),
            permissions=relations.get("user_permissions"),
        )

    def service_delete(self, request, instance):
        services.user_delete(actor=request.user, user=instance)

    def get_deleted_objects(self, objs, request):
        """What deleting goes with, listed on the confirmation page; the service removes it all (tokens,
        consents, connections), so no right over those rows is asked of whoever may delete the user."""
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

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
class ClientCredentialAdmin(ConsoleModelAdmin):
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

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, never deleted: the audit trail keeps naming them

    @admin.action(description="Revoke selected credentials", permissions=["change"])
    def revoke_selected(self, request, queryset):
        for credential in queryset:
            services.client_credential_revoke(actor=request.user, credential=credential)
        self.message_user(request, "Credentials revoked.", messages.SUCCESS)


@admin.register(IssuedToken)
class IssuedTokenAdmin(ConsoleModelAdmin):
    list_display = (
        "jti",
        "user",
        "kind",
        "description",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
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
        "last_used_at",
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
class IdpGroupMappingAdmin(ConsoleModelAdmin):
    list_display = ("idp_group", "group")
    search_fields = ("idp_group", "group__name")
    list_select_related = ("group",)
    autocomplete_fields = ("group",)

    def service_save(self, request, obj, form, change):
        return services.idp_mapping_save(actor=request.user, mapping=obj, created=not change)

    def service_delete(self, request, instance):
        services.idp_mapping_delete(actor=request.user, mapping=instance)


admin.site.unregister(Group)


class GroupForm(forms.ModelForm):
    description = forms.CharField(
        required=False, max_length=1000, help_text="Kept on the scope the group owns (group:<name>)."
    )

    class Meta:
        model = Group
        fields = ("name", "permissions")

    def clean_name(self):
        name = self.cleaned_data["name"]
        if problem := group_name_problem(name):
            raise forms.ValidationError(problem)
        return name


@admin.register(Group)
class GroupAdmin(ServiceModelAdmin, BaseGroupAdmin):
    """Groups as the internal API makes them: each owns a scope `group:<name>`; a name never changes
    (scopes and identity-provider mappings refer to it) and system groups are never deleted."""

    form = GroupForm
    editable_fields = ("description",)
    related_fields = ("permissions",)
    readonly_on_change = ("name",)

    def get_fields(self, request, obj=None):
        return ("name", "description", "permissions") if obj is None else ("name", "permissions")

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or obj.name not in SYSTEM_GROUPS)

    def service_create(self, request, obj, fields):
        services.group_create(actor=request.user, name=obj.name, description=fields.get("description", ""))
        return Group.objects.get(name=obj.name)

    def service_update(self, request, instance, fields):
        return instance  # the name is read-only; permissions go through service_relations

    def service_relations(self, request, instance, relations):
        services.group_permissions_set(
            actor=request.user, group=instance, permissions=relations["permissions"]
        )

    def service_delete(self, request, instance):
        services.group_delete(actor=request.user, name=instance.name, force=True)

    def delete_queryset(self, request, queryset):
        for group in queryset.exclude(name__in=SYSTEM_GROUPS):
            self.service_delete(request, group)


@admin.register(Scope)
class ScopeAdmin(ServiceModelAdmin):
    """Scopes through a structured form (accounts/admin_forms.py); rules are checked by Scope.clean()."""

    form = ScopeForm

    editable_fields = services.SCOPE_EDITABLE_FIELDS
    related_fields = ("groups",)
    readonly_on_change = ("name",)
    list_display = ("name", "description", "group_names", "updated_at")
    search_fields = ("name", "description", "groups__name")
    list_filter = ("groups",)
    filter_horizontal = ("groups",)
    readonly_fields = ("created_at", "updated_at")

    class Media:
        js = ("js/scope-form.js",)  # "Add a rule", and each chosen server's tools as ticks

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("groups")

    def get_form(self, request, obj=None, **kwargs):
        """The form, suggesting the paths of the registry's servers and their known tools (which the
        console's admin site knows: accounts sits below the servers app)."""
        form = super().get_form(request, obj, **kwargs)
        form.server_paths = staticmethod(getattr(self.admin_site, "server_paths", lambda: []))
        form.server_tools = staticmethod(getattr(self.admin_site, "server_tools", lambda: {}))
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

    def service_relations(self, request, instance, relations):
        services.scope_groups_set(actor=request.user, scope=instance, groups=relations["groups"])


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
