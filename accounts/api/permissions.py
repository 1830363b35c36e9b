"""DRF permission classes over the Principal: the one permission check of every JSON API."""

from rest_framework.permissions import BasePermission

from accounts.authentication import principal_of


class IsAuthenticatedPrincipal(BasePermission):
    def has_permission(self, request, view):
        return principal_of(request).is_authenticated


class IsRegistryAdmin(BasePermission):
    """Superusers and members of the admin group; a wildcard scope is not enough."""

    message = "Only registry administrators may do this."

    def has_permission(self, request, view):
        return principal_of(request).is_admin
