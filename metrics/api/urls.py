"""Routes of the metrics service (its own port; see registry_site/metrics_urls.py)."""

from django.urls import path

from metrics.api import views

app_name = "metrics-api"

urlpatterns = [
    path("metrics", views.IngestView.as_view(), name="ingest"),
    path("rate-limit", views.RateLimitView.as_view(), name="rate-limit"),
    path("admin/retention/policies", views.RetentionPoliciesView.as_view(), name="retention-policies"),
    path("admin/retention/cleanup", views.RetentionCleanupView.as_view(), name="retention-cleanup"),
]
