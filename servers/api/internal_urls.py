"""Routes of the internal administration API (section D of the interface): HTTP Basic only."""

from django.urls import path

from servers.api import internal

urlpatterns = [
    path("api/internal/register", internal.InternalRegisterView.as_view(), name="internal-register"),
    path("api/internal/remove", internal.InternalRemoveView.as_view(), name="internal-remove"),
    path("api/internal/toggle", internal.InternalToggleView.as_view(), name="internal-toggle"),
    path("api/internal/healthcheck", internal.InternalHealthcheckView.as_view(), name="internal-healthcheck"),
    path("api/internal/list", internal.InternalListView.as_view(), name="internal-list"),
    path(
        "api/internal/add-to-groups",
        internal.InternalAddToGroupsView.as_view(),
        name="internal-add-to-groups",
    ),
    path(
        "api/internal/remove-from-groups",
        internal.InternalRemoveFromGroupsView.as_view(),
        name="internal-remove-from-groups",
    ),
    path(
        "api/internal/create-group", internal.InternalCreateGroupView.as_view(), name="internal-create-group"
    ),
    path(
        "api/internal/delete-group", internal.InternalDeleteGroupView.as_view(), name="internal-delete-group"
    ),
    path("api/internal/list-groups", internal.InternalListGroupsView.as_view(), name="internal-list-groups"),
]
