from django.urls import path

from limits.api import views

app_name = "limits-api"

urlpatterns = [
    path("api/limits", views.LimitListView.as_view(), name="limits"),
    path("api/limits/<int:limit_id>", views.LimitDetailView.as_view(), name="limit"),
    path("api/quarantines", views.QuarantineListView.as_view(), name="quarantines"),
    path("api/quarantines/<int:quarantine_id>", views.QuarantineDetailView.as_view(), name="quarantine"),
    path("api/internal/limits", views.InternalLimitListView.as_view(), name="internal-limits"),
    path(
        "api/internal/limits/<int:limit_id>", views.InternalLimitDetailView.as_view(), name="internal-limit"
    ),
    path("api/internal/quarantines", views.InternalQuarantineListView.as_view(), name="internal-quarantines"),
    path(
        "api/internal/quarantines/<int:quarantine_id>",
        views.InternalQuarantineDetailView.as_view(),
        name="internal-quarantine",
    ),
]
