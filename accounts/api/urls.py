from django.urls import path

from accounts.api import audit, views

app_name = "accounts-api"

urlpatterns = [
    path("api/auth/providers", views.ProvidersView.as_view(), name="providers"),
    path("api/auth/me", views.MeView.as_view(), name="me"),
    path("api/auth/token", views.ClientCredentialsTokenView.as_view(), name="token"),
    path("api/tokens/generate", views.TokenGenerateView.as_view(), name="tokens-generate"),
    path("api/tokens/<str:jti>", views.TokenView.as_view(), name="token-detail"),
    path("api/admin/tokens", views.AdminTokenView.as_view(), name="admin-tokens"),
    path("api/audit/export", audit.AuditExportView.as_view(), name="audit-export"),
]
