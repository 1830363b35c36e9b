from django.urls import path, re_path

from skills.api import views

app_name = "skills-api"

urlpatterns = [
    path("api/skills", views.SkillListView.as_view(), name="list"),
    path("api/internal/skills", views.InternalSkillListView.as_view(), name="internal-list"),
    re_path(
        r"^api/internal/skills/(?P<skill_path>[a-z0-9-]+)$",
        views.InternalSkillDetailView.as_view(),
        name="internal-detail",
    ),
    path("api/attestations/keys", views.AttestationKeysView.as_view(), name="attestation-keys"),
    re_path(
        r"^api/attestations/(?P<sha256>(sha256:)?[0-9a-fA-F]{64})$",
        views.AttestationView.as_view(),
        name="attestation",
    ),
    re_path(
        r"^api/skills/(?P<skill_path>[a-z0-9-]+)/files/(?P<file_path>.+)$",
        views.SkillFileView.as_view(),
        name="file",
    ),
    re_path(r"^api/skills/(?P<skill_path>[a-z0-9-]+)$", views.SkillDetailView.as_view(), name="detail"),
]
