from django.urls import path

from oauth.api import views

app_name = "oauth-api"

urlpatterns = [
    path("api/trusted-issuers", views.TrustedIssuerListView.as_view(), name="trusted-issuers"),
    path(
        "api/trusted-issuers/<int:issuer_id>", views.TrustedIssuerDetailView.as_view(), name="trusted-issuer"
    ),
    path(
        "api/internal/trusted-issuers",
        views.InternalTrustedIssuerListView.as_view(),
        name="internal-trusted-issuers",
    ),
    path(
        "api/internal/trusted-issuers/<int:issuer_id>",
        views.InternalTrustedIssuerDetailView.as_view(),
        name="internal-trusted-issuer",
    ),
]
